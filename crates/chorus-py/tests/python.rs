//! Builds the `chorus` wheel with maturin and runs the Python test suite (`tests/python/`)
//! against it: the differential test with `openai_harmony` 0.0.8, the reference's scenarios, and
//! the rest of the package's tests.
//!
//! Needs `CHORUS_TEST_PYTHON`: a python with the packages of `.ci/python-oracles.txt` (maturin,
//! pytest, openai-harmony, ...). Without it the test says "not run" and passes; with it anything
//! missing fails the test. The wheel is built once per run (dev profile, its own target folder
//! under `CARGO_TARGET_TMPDIR`, so a running `cargo test` never waits on its own lock) and
//! installed into a folder on `PYTHONPATH`, leaving the python's environment untouched.
//! `CHORUS_PY_CASES` and `CHORUS_PY_SEED` pass through to the differential test.
//!
//! The hub client's tests, the run of the README's hub section and the `chorus.handoff` doctests
//! start the workspace's `chorus` binary (`target/debug/chorus`, built by `cargo test
//! --workspace`; alone: `cargo build -p chorus-cli` first), or `CHORUS_BIN`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

fn run(what: &str, command: &mut Command) {
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("{what}: cannot start {command:?}: {e}"));
    assert!(status.success(), "{what} failed ({status}): {command:?}");
}

/// Builds the wheel and installs it into `site`; returns the wheel's path.
fn build_wheel(python: &str, work: &Path, site: &Path) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let wheels = work.join("wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    run(
        "maturin build",
        Command::new(python)
            .args(["-m", "maturin", "build", "--quiet", "--manifest-path"])
            .arg(manifest.join("Cargo.toml"))
            .arg("--out")
            .arg(&wheels)
            .env("CARGO_TARGET_DIR", work.join("target")),
    );
    let wheel = std::fs::read_dir(&wheels)
        .expect("maturin wrote its output folder")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .find(|path| path.extension().is_some_and(|e| e == "whl"))
        .expect("maturin built a wheel");
    let _ = std::fs::remove_dir_all(site);
    run(
        "pip install of the wheel",
        Command::new(python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(["--no-deps", "--target"])
            .arg(site)
            .arg(&wheel),
    );
    wheel
}

#[test]
fn the_python_package_passes_its_tests() {
    let Ok(python) = std::env::var("CHORUS_TEST_PYTHON") else {
        let _ = writeln!(
            std::io::stderr(),
            "not run: CHORUS_TEST_PYTHON is not set (a python with maturin, pytest and \
             openai-harmony==0.0.8, see .ci/python-oracles.txt)"
        );
        return;
    };
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("chorus-py");
    let site = work.join("site");
    let wheel = build_wheel(&python, &work, &site);
    eprintln!("built {}", wheel.display());
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    // Beside CARGO_TARGET_TMPDIR (`<target>/tmp`): the binaries of this profile.
    let chorus = std::env::var_os("CHORUS_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_TARGET_TMPDIR"))
                .with_file_name(if cfg!(debug_assertions) {
                    "debug"
                } else {
                    "release"
                })
                .join("chorus")
        });
    run(
        "pytest",
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-s"])
            .current_dir(&tests)
            .env("PYTHONPATH", &site)
            .env("CHORUS_PY_WHEEL", &wheel)
            .env("CHORUS_BIN", &chorus),
    );
}
