//! The outcome of the checks as people and CI systems read it: text lines after the results,
//! JUnit XML (a test case per check; Jenkins, GitLab, GitHub's test reporters), and Markdown
//! (a table per group; written to `$GITHUB_STEP_SUMMARY` on GitHub Actions).

use std::fmt::Write as _;

use super::Case;

/// The text shown after the results: a summary line, then every failure (and with `all`,
/// every check).
pub fn text(cases: &[Case], source: &str, all: bool) -> String {
    let failed = cases.iter().filter(|c| !c.passed).count();
    let mut out = format!(
        "expect   {} checks from {source}: {} passed, {}",
        cases.len(),
        cases.len() - failed,
        if failed == 0 {
            "none failed".to_string()
        } else {
            format!("{failed} FAILED")
        }
    );
    for c in cases.iter().filter(|c| all || !c.passed) {
        let _ = write!(
            out,
            "\n{} {}: expected {}, got {}",
            if c.passed { "  ok    " } else { "FAILED  " },
            c.name,
            c.expected,
            c.got
        );
        if let Some(why) = &c.why {
            let _ = write!(out, " ({why})");
        }
        if let Some(loc) = &c.location {
            let _ = write!(out, " [{loc}]");
        }
    }
    out
}

fn xml(s: &str) -> String {
    s.chars()
        .filter(|&c| matches!(c, '\t' | '\n' | '\r') || c >= ' ')
        .collect::<String>()
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// JUnit XML: one `testsuite` per group (`run`, `expect`, `baseline`), a `testcase` per check,
/// a `failure` with the message and where for each that failed.
pub fn junit(cases: &[Case], source: &str, timestamp: &str) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let failed = cases.iter().filter(|c| !c.passed).count();
    let _ = writeln!(
        out,
        "<testsuites name=\"baremark\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" time=\"0\">",
        cases.len()
    );
    for group in ["run", "expect", "baseline"] {
        let of: Vec<&Case> = cases.iter().filter(|c| c.group == group).collect();
        if of.is_empty() {
            continue;
        }
        let f = of.iter().filter(|c| !c.passed).count();
        let _ = writeln!(
            out,
            "  <testsuite name=\"baremark.{group}\" tests=\"{}\" failures=\"{f}\" errors=\"0\" skipped=\"0\" time=\"0\" timestamp=\"{}\">",
            of.len(),
            xml(timestamp)
        );
        let _ = writeln!(
            out,
            "    <properties><property name=\"source\" value=\"{}\"/></properties>",
            xml(source)
        );
        for c in of {
            let name = format!("{}: expected {}", c.name, c.expected);
            let _ = write!(
                out,
                "    <testcase classname=\"baremark.{group}\" name=\"{}\" time=\"0\"",
                xml(&name)
            );
            if c.passed {
                out.push_str("/>\n");
                continue;
            }
            let message = format!(
                "expected {}, got {}{}",
                c.expected,
                c.got,
                c.why
                    .as_deref()
                    .map(|w| format!(" ({w})"))
                    .unwrap_or_default()
            );
            let _ = writeln!(
                out,
                ">\n      <failure message=\"{}\" type=\"expectation\">{}{}</failure>\n    </testcase>",
                xml(&message),
                xml(&message),
                c.location
                    .as_deref()
                    .map(|l| xml(&format!("\nat {l}")))
                    .unwrap_or_default()
            );
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

fn md(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Markdown: a heading with the verdict, then a table of every check.
pub fn markdown(cases: &[Case], source: &str) -> String {
    let failed = cases.iter().filter(|c| !c.passed).count();
    let mut out = format!(
        "### baremark: {} of {} checks passed{}\n\nFrom {}.\n\n| | check | expected | got | why | where |\n|---|---|---|---|---|---|\n",
        cases.len() - failed,
        cases.len(),
        if failed > 0 {
            format!(", **{failed} failed**")
        } else {
            String::new()
        },
        md(source)
    );
    for c in cases {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            if c.passed { "✅" } else { "❌" },
            md(&format!("{} {}", c.group, c.name)),
            md(&c.expected),
            md(&c.got),
            md(c.why.as_deref().unwrap_or("")),
            md(c.location.as_deref().unwrap_or(""))
        );
    }
    out
}
