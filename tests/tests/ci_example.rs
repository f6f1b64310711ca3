//! The ready CI script (examples/ci/baremark-ci.sh, which the GitHub workflow calls), run as a
//! user's CI runs it: a payload package of the user's own outside this repository (the user
//! guide's `pause` payload, section 2), an expectations file, the emulated PMU. Green when the
//! expectations hold (JUnit valid, the summary written), status 6 when one does not. Runs in a
//! temporary folder; the emulator is the one the test command built (BAREMARK_QEMU_PMU).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The user's package: the user guide's payload, standalone, depending on the SDK by path.
fn user_package(dir: &Path) -> PathBuf {
    let ws = workspace();
    let pkg = dir.join("my-payloads");
    std::fs::create_dir_all(pkg.join("src")).unwrap();
    std::fs::copy(
        ws.join("payloads/example/src/main.rs"),
        pkg.join("src/main.rs"),
    )
    .unwrap();
    std::fs::copy(ws.join("payloads/example/build.rs"), pkg.join("build.rs")).unwrap();
    std::fs::write(
        pkg.join("Cargo.toml"),
        format!(
            "[package]\nname = \"my-payloads\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n\
             [[bin]]\nname = \"pause\"\npath = \"src/main.rs\"\ntest = false\n\n\
             [dependencies]\nbaremark-sdk = {{ path = \"{}\" }}\n\n\
             # A package of its own, not a member of an enclosing workspace.\n[workspace]\n",
            ws.join("payloads/sdk").display()
        ),
    )
    .unwrap();
    pkg
}

fn ci(dir: &Path, expect: &str) -> Output {
    std::fs::write(dir.join("expect.toml"), expect).unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg(workspace().join("examples/ci/baremark-ci.sh"))
        .args([
            "--payloads",
            "my-payloads",
            "--expect",
            "expect.toml",
            "--out",
            "out",
        ])
        .args(["--", "--events", "instructions", "--reps", "5"])
        .current_dir(dir)
        .env("BAREMARK_DIR", workspace())
        .env_remove("GITHUB_STEP_SUMMARY");
    // The test command built the emulator; without it the script would build it (minutes).
    let qemu = std::env::var("BAREMARK_QEMU_PMU").expect(
        "BAREMARK_QEMU_PMU is not set: run the test command (./test.sh), which builds the emulator",
    );
    cmd.env("BAREMARK_QEMU_PMU", qemu);
    cmd.output().expect("bash runs the script")
}

#[test]
fn the_example_ci_script_gates_a_users_payload() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    user_package(d);
    let out = ci(
        d,
        "[run]\nerrors = 0\nend = \"ok\"\nemulated = true\ninterrupts = \"none\"\n\n\
         [[expect]]\nbenchmark = \"pause\"\nevent = \"instructions\"\nequals = 3\n",
    );
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    for step in [
        "1/3 provisioning",
        "2/3 building",
        "3/3 running",
        "passed (files in",
    ] {
        assert!(err.contains(step), "`{step}` not said:\n{}", text(&out));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("expect   5 checks from"), "{}", text(&out));
    for f in ["serial.log", "results.json", "junit.xml", "summary.md"] {
        assert!(
            d.join("out").join(f).is_file(),
            "out/{f} missing:\n{}",
            text(&out)
        );
    }
    let xsd = workspace().join("tests/fixtures/junit.xsd");
    let v = Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&xsd)
        .arg(d.join("out/junit.xml"))
        .output()
        .expect("xmllint (scripts/provision.sh installs it)");
    assert!(v.status.success(), "{}", text(&v));
    let md = std::fs::read_to_string(d.join("out/summary.md")).unwrap();
    assert!(
        md.contains("| ✅ | expect pause instructions | = 3 | 3 |"),
        "{md}"
    );

    // The same payload against a wrong expectation: the script exits with the gate's status.
    let out = ci(
        d,
        "[[expect]]\nbenchmark = \"pause\"\nevent = \"instructions\"\nequals = 4\n",
    );
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("FAILED   pause instructions: expected = 4, got 3"),
        "{}",
        text(&out)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("a check FAILED"));
}

#[test]
fn the_example_ci_script_refuses_what_it_cannot_use() {
    let dir = tempfile::tempdir().unwrap();
    let script = workspace().join("examples/ci/baremark-ci.sh");
    for (args, says) in [
        (&[][..], "give --payloads DIR"),
        (&["--payloads", "."][..], "no Cargo.toml there"),
        (
            &["--payloads", "nope", "--bogus"][..],
            "unknown argument --bogus",
        ),
    ] {
        let out = Command::new("bash")
            .arg(&script)
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out)
        );
    }
}
