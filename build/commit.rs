//! Which commit a build comes from, as `capi2argo --version` prints it: the rules, apart from
//! the build script's I/O so the tests can hold them (tests/version.rs).

/// What goes between the parentheses of `capi2argo 0.1.0 (…)`, from the first source that
/// has an answer:
///
/// 1. `CAPI2ARGO_COMMIT` (and `CAPI2ARGO_COMMIT_DATE`), for builds where git cannot tell:
///    a source tarball, a distribution's package;
/// 2. git, when the crate's directory is the top of a git work tree (`git` gives the short
///    hash and the commit's date);
/// 3. the commit `cargo package` recorded in `.cargo_vcs_info.json`, for a build from the
///    `.crate` (crates.io), which has no history: the hash only;
/// 4. `commit unknown`.
pub fn describe(
    override_commit: Option<&str>,
    override_date: Option<&str>,
    git: Option<&str>,
    vcs_info: Option<&str>,
) -> String {
    if let Some(commit) = word(override_commit) {
        return match word(override_date) {
            Some(date) => format!("{} {date}", short(commit)),
            None => short(commit).to_string(),
        };
    }
    if let Some(line) = word(git) {
        // `<hash> <date>`, as `git log -1 --format='%h %cs'` prints it.
        let mut parts = line.split_whitespace();
        let hash_and_date = parts.next().zip(parts.next());
        if let Some((hash, date)) = hash_and_date.filter(|(hash, _)| is_hex(hash)) {
            return format!("{} {date}", short(hash));
        }
    }
    if let Some(sha1) = vcs_info.and_then(vcs_info_sha1) {
        return short(sha1).to_string();
    }
    "commit unknown".to_string()
}

/// The `"sha1"` of `.cargo_vcs_info.json` (`{"git": {"sha1": "…"}, "path_in_vcs": ""}`),
/// read without a JSON library: the build script has no dependencies.
pub fn vcs_info_sha1(json: &str) -> Option<&str> {
    let after = json
        .split_once("\"sha1\"")?
        .1
        .trim_start()
        .strip_prefix(':')?;
    let value = after.trim_start().strip_prefix('"')?.split('"').next()?;
    (value.len() == 40 && is_hex(value)).then_some(value)
}

/// The text, trimmed, when there is any.
fn word(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|t| !t.is_empty())
}

/// Seven hex digits, as git abbreviates by default; anything else as it was given.
fn short(commit: &str) -> &str {
    if commit.len() > 7 && is_hex(commit) {
        &commit[..7]
    } else {
        commit
    }
}

fn is_hex(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_hexdigit())
}
