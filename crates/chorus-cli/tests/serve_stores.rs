//! `chorus serve --store nats://…`, `redis://…` and `postgres://…` through the real binary: built with the
//! backend's cargo feature it prints the store, answers `/healthz` (which asks the store) and
//! keeps confirmations and media beside the working directory; built without it, it refuses
//! with exit code 2 and names the feature.

mod common;

use std::process::Command;

/// Runs `chorus serve --store STORE` and returns its exit code and standard error.
fn refused(store: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(["serve", "--listen", "127.0.0.1:0", "--store", store])
        .current_dir(dir.path())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn refusals_name_the_cause() {
    // 127.0.0.1:1 refuses connections; a binary without a backend's feature names the feature.
    for (store, backend) in [
        ("nats://127.0.0.1:1", "nats"),
        ("redis://127.0.0.1:1", "redis"),
        ("postgres://chorus@127.0.0.1:1/db", "postgres"),
    ] {
        let built = match backend {
            "nats" => cfg!(feature = "nats"),
            "redis" => cfg!(feature = "redis"),
            _ => cfg!(feature = "postgres"),
        };
        let expected = match (built, backend) {
            // The address it tried, without a password.
            (true, "postgres") => "backend postgres: ".to_owned(),
            (true, _) => format!("backend {backend}: cannot connect"),
            (false, _) => format!("cargo feature `{backend}`"),
        };
        let (code, err) = refused(store);
        assert_eq!(code, Some(2), "{store}: {err}");
        assert!(
            err.contains(&expected),
            "{store}: expected {expected:?} in {err}"
        );
        if built && backend == "postgres" {
            assert!(err.contains("chorus@127.0.0.1:1/db"), "{err}");
        }
    }
}

#[cfg(any(feature = "nats", feature = "redis", feature = "postgres"))]
mod on_server {
    use std::io::Write;
    use std::process::Stdio;

    use super::common::{Served, http};

    /// Says, past the harness's output capture, that a backend was not tested and why.
    fn not_tested(backend: &str, why: &str) {
        let _ = writeln!(
            std::io::stderr(),
            "\n*** {backend} backend NOT tested: {why} ***\n"
        );
    }

    /// Serves on the store at `url` in a fresh namespace, checks the address line and `/healthz`,
    /// stops with SIGTERM; returns the namespace (to delete).
    fn serve_and_stop(url: &str) -> String {
        serve_and_stop_with(url, &[])
    }

    /// Like [`serve_and_stop`], with more arguments for `chorus serve`.
    fn serve_and_stop_with(url: &str, more: &[&str]) -> String {
        let ns = format!(
            "chorus_test_cli_{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        let store = format!("{url}?namespace={ns}");
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["--store", store.as_str()];
        args.extend_from_slice(more);
        let mut served = Served::start(dir.path(), &args, Stdio::inherit());
        let first = &served.first_line;
        assert!(first.ends_with(&format!("(store {store})")), "{first}");
        let addr = served.addr.clone();
        let health = http(
            &addr,
            "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        assert!(health.starts_with("HTTP/1.1 200"), "{health}");
        for beside in ["-confirmations.db", "-blobs"] {
            let path = dir.path().join(format!("{ns}{beside}"));
            assert!(path.exists(), "{} is made", path.display());
        }
        assert!(!dir.path().join("chorus.db").exists(), "no SQLite store");

        let status = served.stop();
        assert!(status.success(), "{status:?}");
        ns
    }

    #[cfg(feature = "nats")]
    #[test]
    fn serves_on_nats() {
        let Ok(url) = std::env::var("CHORUS_TEST_NATS_URL") else {
            return not_tested("NATS", "CHORUS_TEST_NATS_URL not set");
        };
        let ns = serve_and_stop(&url);
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let bus = chorus_bus::NatsBus::connect(&url, &ns, Default::default())
                .await
                .expect("reconnect");
            bus.destroy().await.expect("delete the test namespace");
        });
    }

    #[cfg(feature = "redis")]
    #[test]
    fn serves_on_redis() {
        let Ok(url) = std::env::var("CHORUS_TEST_REDIS_URL") else {
            return not_tested("Redis", "CHORUS_TEST_REDIS_URL not set");
        };
        // The test Redis keeps nothing on disk: serving on it must be asked for, with the flag
        // the refusal names (the refusal itself and the config key are tested in
        // chorus-server's redis_persistence.rs).
        let ns = serve_and_stop_with(&url, &["--accept-volatile-store"]);
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let bus = chorus_bus::RedisBus::connect(&url, &ns, Default::default())
                .await
                .expect("reconnect");
            bus.destroy().await.expect("delete the test namespace");
        });
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn serves_on_postgres_and_migrates_alone() {
        let Ok(url) = std::env::var("CHORUS_TEST_POSTGRES_URL") else {
            return not_tested("PostgreSQL", "CHORUS_TEST_POSTGRES_URL not set");
        };
        let ns = serve_and_stop(&url);
        // The schema is there: a second migration finds nothing to do.
        let store = format!("{url}?namespace={ns}");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_chorus"))
            .args(["serve", "--migrate-only", "--store", &store])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{said} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            said.contains(&format!(
                "schema {ns} is at version {}; nothing to do",
                chorus_bus::SCHEMA_VERSION
            )),
            "{said}"
        );
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let bus = chorus_bus::PostgresBus::connect(&url, &ns, Default::default())
                .await
                .expect("reconnect");
            bus.destroy().await.expect("delete the test namespace");
        });
    }
}
