#!/usr/bin/env python3
"""Writes the committed seed corpora, fuzz/seeds/<target>/, from small hand-made inputs and
excerpts of the repository's own fixtures (boot/tests/fixtures). Nothing here is a copy of
Intel's perfmon files (see docs/reliability.md, "Fuzzed parsers"): the perfmon JSON and
mapfile seeds are written by hand in that format. Rerun after changing it:

    python3 fuzz/make_seeds.py

Binary formats are written from their specs: the ELF64 header and program headers
(kernel/src/task/elf.rs), the BMEVTAB1 event table (events/src/table.rs), ustar (POSIX).
"""

import io
import json
import os
import shutil
import struct
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = os.path.join(ROOT, "fuzz", "seeds")


def write(target, name, data):
    os.makedirs(os.path.join(SEEDS, target), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(SEEDS, target, name), "wb") as f:
        f.write(data)


# --------------------------------------------------------------------------------------------
# event_spec: lines from docs/events.md, and a few errors. The first byte picks the PMU (low
# three bits: 0 Intel v4, 1 v5, 2 hybrid Atom, 3 Intel v2, 4 AMD Zen 4, 5 AMD pre-Zen, 6 TSC
# only) and, with bit 3, the perfmon-like name table (fuzz/src/targets.rs, `event_spec`).

EVENT_SPECS = {
    "generic": ("0", "instructions:u,cycles:k,branch-misses,cycles:uk"),
    "group": ("1", "{instructions,cycles}:u, {branches,branch-misses}"),
    "raw": ("3", "r01c2,r1c2:u,r0"),
    "terms": ("0", "cpu/event=0x3c,umask=0x01,cmask=1,inv,edge/u"),
    "config-name": ("8", "cpu/config=0x1c2,name=my-event/,cpu/event=0x0e,umask=0x01,name='UOPS ISSUED'/"),
    "hybrid": ("2", "cpu_core/event=0xc0,umask2=0x1,in_tx=1/,cpu_atom/event=0x3c/k"),
    "amd": ("4", "ex_ret_brn_misp:uH,ls_not_halted_p0_cyc.p0_freq_cyc:G,cycles"),
    "pre-zen": ("5", "cycles,instructions:u,r0c0"),
    "table": ("8", "uops_issued.any,LD_BLOCKS.STORE_FORWARD:u,offcore_response.all_data_rd"),
    "tsc-only": ("6", "cycles,{instructions}"),
    "errors": ("9", "cylces,{instructions,,}:p cpu/event=0x100/ r"),
}

# --------------------------------------------------------------------------------------------
# perfmon_json: hand-written events in Intel's perfmon JSON layout.

PERFMON = {
    "header.json": {
        "Header": {"Info": "hand-written seed", "Version": "1.0", "DatePublished": "11/24/2026"},
        "Events": [
            {"EventCode": "0x00", "UMask": "0x01", "EventName": "INST_RETIRED.ANY",
             "Counter": "Fixed counter 0", "BriefDescription": "Instructions retired"},
            {"EventCode": "0x3C", "UMask": "0x00", "EventName": "CPU_CLK_UNHALTED.THREAD_P",
             "Counter": "0,1,2,3", "CounterMask": "0", "Invert": "0", "EdgeDetect": "0"},
            {"EventCode": "0xC3", "UMask": "0x01", "EventName": "MACHINE_CLEARS.COUNT",
             "Counter": "0-3", "CounterMask": "1", "EdgeDetect": "1", "Deprecated": "0"},
        ],
    },
    "offcore.json": [
        {"EventCode": "0xB7, 0xBB", "UMask": "0x01", "EventName": "OFFCORE_RESPONSE.DEMAND_DATA_RD.ANY",
         "MSRIndex": "0x1a6,0x1a7", "MSRValue": "0x10001", "Counter": "0,1,2,3",
         "TakenAlone": "0", "PublicDescription": "Offcore demand data reads"},
        {"EventCode": "0xCD", "UMask": "0x01", "EventName": "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4",
         "MSRIndex": "0x3F6", "MSRValue": "0x4", "Counter": "3", "TakenAlone": "1"},
        {"EventCode": "0xD0", "UMask": "0x81", "UMaskExt": "0x02", "EventName": "MEM_INST_RETIRED.ALL_LOADS",
         "AnyThread": "0", "Counter": "0,1,2,3"},
    ],
    "skipped.json": {
        "Events": [
            {"EventCode": "0x1FF", "UMask": "0x01", "EventName": "TOO.WIDE"},
            {"EventCode": "0x0e", "UMask": "0x01", "EventName": "uops_issued.any", "Counter": "0,1"},
            {"EventCode": "0x0E", "UMask": "0x01", "EventName": "UOPS_ISSUED.ANY", "Counter": "0,1"},
            {"EventCode": "0x3c", "UMask": "0x00", "EventName": "EQ", "Equal": "1"},
            {"EventCode": "0x3c", "EventName": "EXTSEL", "ExtSel": "1"},
            {"EventName": "NO.CODE"},
            "not an object",
            {"EventCode": 60, "UMask": 0, "EventName": "NUMBERS", "Invert": True},
        ]
    },
}

# --------------------------------------------------------------------------------------------
# perfmon_mapfile: made-up rows in mapfile.csv's layout.

MAPFILE = {
    "plain.csv": (
        "Family-model,Version,Filename,EventType,Core Type,Native Model ID,Core Role Name\n"
        "GenuineIntel-6-55-[01234],V1.30,/SKX/events/skylakex_core.json,core,,,\n"
        "GenuineIntel-6-55-[56789ABCDEF],V1.20,/CLX/events/cascadelakex_core.json,core,,,\n"
        "GenuineIntel-6-55-[01234],V1.30,/SKX/events/skylakex_uncore.json,uncore,,,\n"
        "GenuineIntel-6-(2A|2D),V2,/SNB/events/sandybridge_core.json,core,,,\n"
    ),
    "hybrid.csv": (
        "\ufeffFamily-model,Version,Filename,EventType,Core Type,Native Model ID,Core Role Name\n"
        "GenuineIntel-6-(97|9A|B7|BA|BF),V1.2,/ADL/events/alderlake_gracemont_core.json,hybridcore,0x20,0x0,Atom\n"
        "GenuineIntel-6-(97|9A|B7|BA|BF),V1.2,/ADL/events/alderlake_goldencove_core.json,hybridcore,Core,0x1,Core\n"
        "GenuineIntel-6-9[7A],V1.2,/ADL/metrics/x.json,metrics,,,\n"
    ),
    "bad.csv": (
        "Family-model,Filename,EventType\n"
        ",/x.json,core\n"
        "GenuineIntel-6-[,/y.json,core\n"
        "GenuineIntel-6-5?5*.+,/z.json,core\n"
        "\"quoted,6-55\",\"/q.json\",core\n"
    ),
}

# --------------------------------------------------------------------------------------------
# event_table: BMEVTAB1 (events/src/table.rs).

HDR_CPU, HDR_STEPPING, HDR_CORE_TYPE = 1, 2, 4
F = {name: 1 << i for i, name in enumerate(
    ["inv", "edge", "any", "in_tx", "in_txcp", "taken_alone", "deprecated", "gp", "fixed",
     "extra", "alt", "arch_bit", "description"])}


def table(events, cpu=None, stepping=None, core_type=None):
    """events: dicts with name, code, umask, and optional fields; cpu: (vendor, family, model)."""
    pool = bytearray()
    records = bytearray()
    for e in events:
        name = e["name"].encode()
        name_off = len(pool)
        pool += name
        desc = e.get("description")
        desc_off = desc_len = 0
        if desc is not None:
            desc_off = len(pool)
            pool += desc.encode()
            desc_len = len(desc.encode())
        flags = 0
        for flag in ("inv", "edge", "any", "in_tx", "in_txcp", "taken_alone", "deprecated"):
            if e.get(flag):
                flags |= F[flag]
        for field in ("gp", "fixed", "extra", "alt", "arch_bit"):
            if e.get(field) is not None:
                flags |= F[field]
        if desc is not None:
            flags |= F["description"]
        extra = e.get("extra") or (0, 0)
        alt_code, alt_msr, alt_value = e.get("alt") or (0, 0, 0)
        records += struct.pack(
            "<IHHHBBBBBBIIQHHIQII",
            name_off, len(name), flags, e["code"], e["umask"], e.get("umask2", 0),
            e.get("cmask", 0), e.get("fixed") or 0, e.get("arch_bit") or 0, e.get("source", 4),
            e.get("gp") or 0, extra[0], extra[1], alt_code, 0, alt_msr, alt_value,
            desc_off, desc_len)
    flags = 0
    vendor = family = model = step = 0
    if cpu is not None:
        flags |= HDR_CPU
        vendor, family, model = cpu
        if stepping is not None:
            flags |= HDR_STEPPING
            step = stepping
    ct = 0
    if core_type is not None:
        flags |= HDR_CORE_TYPE
        ct = core_type
    header = b"BMEVTAB1" + struct.pack(
        "<HHHHBBHIIIIIQ", 1, 48, 56, flags, vendor, ct, 0, family, model, step,
        len(events), len(pool), 0)
    assert len(header) == 48 and len(records) == 56 * len(events)
    return header + bytes(records) + bytes(pool)


TABLES = {
    "empty.tab": table([]),
    "skx.tab": table(
        [
            {"name": "INST_RETIRED.ANY", "code": 0, "umask": 1, "fixed": 0, "source": 4,
             "description": "Instructions retired"},
            {"name": "MACHINE_CLEARS.COUNT", "code": 0xC3, "umask": 1, "cmask": 1, "edge": True,
             "gp": 0xF},
            {"name": "OFFCORE_RESPONSE.DEMAND_DATA_RD.ANY", "code": 0xB7, "umask": 1, "gp": 0xF,
             "extra": (0x1A6, 0x10001), "alt": (0xBB, 0x1A7, 0x10001)},
            {"name": "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4", "code": 0xCD, "umask": 1, "gp": 8,
             "extra": (0x3F6, 4), "taken_alone": True, "deprecated": True},
        ],
        cpu=(0, 6, 0x55), stepping=4),
    "hybrid.tab": table(
        [
            {"name": "cycles", "code": 0x3C, "umask": 0, "arch_bit": 0, "source": 1, "gp": 0xFF,
             "fixed": 1},
            {"name": "TOPDOWN.SLOTS", "code": 0xA4, "umask": 1, "umask2": 2, "inv": True,
             "any": True, "in_tx": True, "in_txcp": True, "gp": 0xFF},
        ],
        cpu=(0, 6, 0x97), core_type=0x40),
    "amd.tab": table(
        [{"name": "ls_not_halted_p0_cyc.p0_freq_cyc", "code": 0x120, "umask": 1, "gp": 0x3F,
          "source": 2}],
        cpu=(1, 25, 0x11)),
}

# --------------------------------------------------------------------------------------------
# nanobench_config: docs/nanobench-configs.md's example, and options and errors.

NANOBENCH = {
    "readme.txt": (
        "# nanoBench config (README format): counted in user mode, as nanoBench.sh does\n"
        "C0.00 INST_RETIRED.ANY_P\n"
        "C4.00 BR_INST_RETIRED.ALL_BRANCHES\n"
        "C0.00.CTR=2 INST_RETIRED.ANY_P.CTR2\n"
        "C4.00.TakenAlone BR_INST_RETIRED.ALONE\n"
        "0E.01 UOPS_ISSUED.ANY\n"
        "B7.01.MSR_RSP0=0x10001 OFFCORE_RESPONSE.DEMAND_DATA_RD.ANY_RESPONSE\n"
    ),
    "options.txt": (
        "3C.00.CMSK=1.INV.EDG CYCLES.INV\r\n"
        "\t  A2.01.AnyT   RESOURCE_STALLS.ANY\n"
        "CD.01.MSR_3F6H=0x4.MSR_PF=0x11 LOAD_LAT\n"
        "120.01 AMD.WIDE\n"
        "D1.01\n"
        "\n"
        "   # indented comment\n"
        "0E.01.MSR_RSP1=0 NAME 'WITH' \"QUOTES\"\n"
    ),
    "error.txt": "C0.00 OK\n3C.00.CMSK=1.edg CYCLES\n",
}

# --------------------------------------------------------------------------------------------
# elf_plan: small ELF64 executables written from kernel/src/task/elf.rs's rules.

PT_LOAD, PT_NOTE, PT_INTERP, PT_GNU_STACK = 1, 4, 3, 0x6474E551
R, W, X = 4, 2, 1


def elf(entry, phdrs, length=None, e_type=2, machine=62):
    """phdrs: (p_type, flags, offset, vaddr, filesz, memsz, align)."""
    header = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    header += struct.pack("<HHIQQQIHHHHHH", e_type, machine, 1, entry, 64 if phdrs else 0, 0, 0,
                          64, 56, len(phdrs), 64, 0, 0)
    out = bytearray(header)
    for p_type, flags, offset, vaddr, filesz, memsz, align in phdrs:
        out += struct.pack("<IIQQQQQQ", p_type, flags, offset, vaddr, vaddr, filesz, memsz, align)
    end = max([len(out)] + [o + f for _, _, o, _, f, _, _ in phdrs])
    out += bytes(max(end, length or 0) - len(out))
    return bytes(out)


ELFS = {
    "one-segment.elf": elf(0x401080, [(PT_LOAD, R | X, 0x80, 0x401080, 0x40, 0x40, 0x1000)]),
    "text-data-bss.elf": elf(0x401210, [
        (PT_LOAD, R, 0, 0x400000, 0x158, 0x158, 0x1000),
        (PT_LOAD, R | X, 0x200, 0x401200, 0x80, 0x80, 0x1000),
        (PT_LOAD, R | W, 0x300, 0x402300, 0x20, 0x3000, 0x1000),
        (PT_GNU_STACK, R | W, 0, 0, 0, 0, 0x10),
        (PT_NOTE, R, 0x158, 0x400158, 0, 0, 4),
    ]),
    "rejected.elf": elf(0x401000, [
        (PT_INTERP, R, 0xB0, 0x4000B0, 0x10, 0x10, 1),
        (PT_LOAD, R | W | X, 0xC0, 0x4010C0, 0x40, 0x40, 0x1000),
    ]),
    "pie.elf": elf(0x1080, [(PT_LOAD, R | X, 0x80, 0x1080, 0x40, 0x40, 0x1000)], e_type=3),
}

# --------------------------------------------------------------------------------------------
# run_config and ramdisk: docs/run-config.md's keys.

RUN_CFG = {
    "all-keys.cfg": (
        "# written by baremark run\n"
        "on_end = qemu-exit\n"
        "test = none\n"
        "timer_checks = off\n"
        "selftest = on\n"
        "quantum_us = 500\n"
        "task_budget_ms = 10000\n"
        "events = {instructions,cycles}:u,r01c2\n"
        "reps = 20\n"
        "warmup = 5\n"
        "overhead = diff\n"
        "counter_preset = 4294967295\n"
        "test_pmu_fault = 3\n"
    ),
    "errors.cfg": (
        "on_end = reboot\r\n"
        "no equals here\n"
        "colour = blue # unknown\n"
        "reps = 0\n"
        "reps = 1001\n"
        "warmup=-1\n"
        "events = none\n"
        "  quantum_us   =   1000001  \n"
        "selftest = yes\n"
    ),
}


def tar(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            t.addfile(info, io.BytesIO(data))
    return trim(buf.getvalue())


def trim(archive):
    """Drops tarfile's padding to a 10 KiB record: the members, then two zero blocks."""
    end = len(archive.rstrip(b"\0"))
    end = (end + 511) // 512 * 512
    return archive[:end] + bytes(1024)


def tar_dir_member():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        info = tarfile.TarInfo("payloads")
        info.type = tarfile.DIRTYPE
        info.mtime = 0
        t.addfile(info)
        long_dir = "d" * 120
        info = tarfile.TarInfo(long_dir + "/run.cfg")  # ustar prefix + name
        data = b"reps = 3\n"
        info.size = len(data)
        info.mtime = 0
        t.addfile(info, io.BytesIO(data))
    return trim(buf.getvalue())


RAMDISKS = {
    "config-and-payload.tar": tar([
        ("run.cfg", RUN_CFG["all-keys.cfg"].encode()),
        ("payloads/one.elf", ELFS["one-segment.elf"]),
    ]),
    "events.tar": tar([
        ("run.cfg", b"events = cycles\nreps = 5\n"),
        ("events/GenuineIntel-6-55.tab", TABLES["skx.tab"]),
        ("events/nanobench.cfg", NANOBENCH["readme.txt"].encode()),
    ]),
    "dir-and-prefix.tar": tar_dir_member(),
    # No end-of-archive blocks, and the last member's padding cut (both accepted).
    "cut.tar": tar([("run.cfg", b"selftest = on\n")])[:512 + 14],
}

# --------------------------------------------------------------------------------------------
# serial_records and results: excerpts of boot/tests/fixtures logs, and damage.


def fixture(name):
    with open(os.path.join(ROOT, "boot", "tests", "fixtures", name), encoding="utf-8") as f:
        return f.read().splitlines(keepends=True)


def first_of_each_type(lines, limit=6000):
    """The first line of each record type (and the first two `result`s and `samples`), in
    order, plus text lines, up to `limit` bytes."""
    out, seen, size = [], {}, 0
    for line in lines:
        kind = None
        if line.startswith("{"):
            try:
                kind = json.loads(line).get("type")
            except ValueError:
                pass
        cap = 2 if kind in ("result", "samples", "metric") else 1
        if seen.get(kind, 0) >= cap and kind is not None:
            continue
        if kind is None and len(line) > 200:
            continue
        if size + len(line) > limit:
            continue
        seen[kind] = seen.get(kind, 0) + 1
        out.append(line)
        size += len(line)
    return "".join(out)


LOGS = {
    "bench-diff.log": "".join(fixture("bench-diff.log")),
    "suite-excerpt.log": first_of_each_type(fixture("suite-tcg.log")),
    "nanobench-excerpt.log": first_of_each_type(fixture("nanobench-emulated.log")),
    "bench-empty-excerpt.log": first_of_each_type(fixture("bench-empty.log")),
    "damaged.log": (
        "BdsDxe: loading Boot0001 \"UEFI QEMU HARDDISK\"\r\n"
        '{"type":"boot","v":1,"kernel":"baremark"}\n'
        '{"type":"bench_start","v":2,"payload":"p","bench":"b"}\n'
        '{"type":"result","v":1,"payload":"p","bench":"b","event":"tsc","supported":"yes"}\n'
        '{"type":"samples","v":1,"payload":"p","bench":"b","event":"tsc","kind":"raw","first":999999,"values":[1,2]}\n'
        '{"type":"samples","v":1,"payload":"p","bench":"x","event":"tsc","kind":"raw","first":0,"values":[1.5]}\n'
        '{"type":"task_error","v":1,"task":"bad","message":"not an ELF"}\n'
        '{"type":"fault","v":1,"mode":"user","task":"t","mnemonic":"#PF","name":"page fault","rip":"0x401000"}\n'
        '{"type":"task_killed","v":1,"task":"t","budget_ms":10}\n'
        '{"type":"harness_error","v":1,"message":"bad events"}\n'
        '{"type":"result","v":1,"payload":"p","bench":"b","ev\n'
        '{"type":"end","v":1,"status":"fail","reason":"panic"}\n'
    ),
}


def main():
    shutil.rmtree(SEEDS, ignore_errors=True)
    for name, (select, text) in EVENT_SPECS.items():
        write("event_spec", name + ".txt", select + text)
    for name, value in PERFMON.items():
        write("perfmon_json", name, json.dumps(value, indent=1) + "\n")
    for name, text in MAPFILE.items():
        write("perfmon_mapfile", name, text)
    for name, data in TABLES.items():
        write("event_table", name, data)
    for name, text in NANOBENCH.items():
        write("nanobench_config", name, text)
    for name, data in ELFS.items():
        write("elf_plan", name, data)
    for name, text in RUN_CFG.items():
        write("run_config", name, text)
    for name, data in RAMDISKS.items():
        write("ramdisk", name, data)
    for name, text in LOGS.items():
        write("serial_records", name, text)
        write("results", name, text)


if __name__ == "__main__":
    main()
