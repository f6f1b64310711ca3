//! Bandwidth as cores are added, and loaded latency (`bandwidth` payload).
