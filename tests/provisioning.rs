//! What a new machine is given before `make test`: one list of Debian packages
//! (build/debian-packages), which `make test` (its first step, `make packages`) and `.ci/run`
//! install from through the same script, and nothing installed behind its back.

use std::fs;

use crate::common::root;

/// The list's entries: package, probe, why.
fn packages() -> Vec<(String, String, String)> {
    let list = fs::read_to_string(root().join("build/debian-packages")).expect("the list");
    list.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            // `|` separates the fields, so no probe may hold one.
            let fields: Vec<&str> = l.split('|').map(str::trim).collect();
            assert_eq!(fields.len(), 3, "package | probe | why: {l}");
            assert!(fields.iter().all(|f| !f.is_empty()), "an empty field: {l}");
            (
                fields[0].to_string(),
                fields[1].to_string(),
                fields[2].to_string(),
            )
        })
        .collect()
}

#[test]
fn one_list_of_debian_packages_serves_make_test_and_ci() {
    let listed = packages();
    assert!(!listed.is_empty());
    let makefile = fs::read_to_string(root().join("Makefile")).expect("Makefile");
    let ci = fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
    // Both install through the one script, which reads the one list.
    assert!(
        ci.contains("\nbuild/debian-packages.sh\n"),
        ".ci/run runs the script"
    );
    assert!(
        makefile.contains("packages:\n\t@build/debian-packages.sh\n"),
        "make packages runs the script"
    );
    let steps = makefile
        .lines()
        .find_map(|l| l.strip_prefix("TEST_STEPS := "))
        .expect("TEST_STEPS");
    assert!(
        steps.starts_with("packages "),
        "make test installs the packages first: {steps}"
    );
    // Neither installs a Debian package of its own (a message may say which one to install).
    for (name, text) in [("Makefile", &makefile), (".ci/run", &ci)] {
        assert!(
            !text.contains("apt-get update") && !text.contains("install -y"),
            "{name} installs a Debian package outside build/debian-packages"
        );
    }
    // And every package the script could install is on the list once.
    let mut names: Vec<&str> = listed.iter().map(|(p, _, _)| p.as_str()).collect();
    let count = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), count, "a package listed twice");
}

/// A probe that is true here says the package's tool is here: each is a shell test that can
/// tell, not a constant.
#[test]
fn every_probe_is_a_test_of_the_machine() {
    for (package, probe, _) in packages() {
        assert!(
            probe.contains("command -v ") || probe.contains("test -"),
            "{package}: {probe} tests nothing on the machine"
        );
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("{probe} >/dev/null 2>&1; echo $?")])
            .output()
            .expect("sh runs");
        let code = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(
            code == "0" || code == "1" || code == "127",
            "{package}: {probe} gave {code}"
        );
    }
}
