//! A child process that ends with the test: killed and reaped when dropped,
//! also when the test panics between spawning it and handing it on.

use std::process::Child;

pub struct Guard(Option<Child>);

impl Guard {
    pub fn new(child: Child) -> Guard {
        Guard(Some(child))
    }

    pub fn get_mut(&mut self) -> &mut Child {
        // `take` consumes the guard, so the child is always here.
        self.0.as_mut().expect("a guarded child")
    }

    /// The child, no longer guarded: for an owner with a `Drop` of its own.
    pub fn take(mut self) -> Child {
        self.0.take().expect("a guarded child")
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            // A wrapper (strace, taskset) that is killed alone leaves its
            // own child running: its children go first.
            let pid = child.id();
            let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .unwrap_or_default();
            for grandchild in children.split_whitespace() {
                let _ = std::process::Command::new("kill")
                    .args(["-KILL", grandchild])
                    .status();
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn a_guarded_hookgate_ends_when_the_test_panics() {
    let dir = super::redis::TempDir::new("guard");
    let config = dir.path().join("hookgate.toml");
    std::fs::write(
        &config,
        "[server]\nlisten = \"127.0.0.1:0\"\nupstream = \"http://127.0.0.1:9\"\n\
         [admin]\nlisten = \"127.0.0.1:0\"\n\
         [[source]]\nname = \"s\"\npath = \"/s\"\nscheme = \"stripe\"\nsecrets = [\"whsec_x\"]\n",
    )
    .expect("write config");
    let pid = std::sync::Mutex::new(None);
    let failed = std::panic::catch_unwind(|| {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_hookgate"))
            .arg("run")
            .arg("--config")
            .arg(&config)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start hookgate");
        *pid.lock().expect("pid") = Some(child.id());
        let _guard = Guard::new(child);
        panic!("a test failing while hookgate runs");
    });
    assert!(failed.is_err());
    let pid = pid.lock().expect("pid").expect("it started");
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "hookgate {pid} outlived the failed test"
    );
}
