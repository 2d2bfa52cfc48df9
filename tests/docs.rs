//! The book (`docs/`, built by `make docs` into `target/book/`), the README and every other
//! markdown file link only to what exists: every relative link and anchor resolves.
//!
//! The book's pages are checked as mdBook wrote them (its own heading ids, its `.md` → `.html`
//! rewriting); the README and the other markdown files as GitHub shows them, their links into
//! the book checked against the same built pages.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::common;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The built book, or `None` (said loudly) when `make docs` has not run since `docs/` last
/// changed: a stale book would check yesterday's links.
fn book() -> Option<PathBuf> {
    let book = root().join("target/book");
    let modified = |path: &Path| fs::metadata(path).and_then(|m| m.modified()).ok();
    let Some(built) = modified(&book.join("index.html")) else {
        common::skip(
            "no built book in target/book (make docs), so the book's links were NOT checked",
        );
        return None;
    };
    let newer = fs::read_dir(root().join("docs/src"))
        .expect("docs/src")
        .chain(fs::read_dir(root().join("docs")).expect("docs"))
        .flatten()
        .any(|entry| modified(&entry.path()).is_some_and(|m| m > built));
    if newer {
        common::skip(
            "target/book is older than docs/ (make docs), so the book's links were NOT checked",
        );
        return None;
    }
    Some(book)
}

/// The values of every `attribute="…"` in an HTML page.
fn attribute_values<'a>(html: &'a str, attribute: &str) -> Vec<&'a str> {
    let needle = format!(" {attribute}=\"");
    html.match_indices(&needle)
        .filter_map(|(at, _)| {
            let rest = &html[at + needle.len()..];
            rest.find('"').map(|end| &rest[..end])
        })
        .collect()
}

/// `path` with `.` and `..` resolved without touching the file system.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Whether a link leaves the repository (a scheme) and so is not ours to check.
fn is_external(link: &str) -> bool {
    link.contains("://") || link.starts_with("mailto:") || link.starts_with("javascript:")
}

/// What is wrong with `link` on the built page `page` of `book`, if anything.
fn broken_in_book(book: &Path, page: &Path, link: &str) -> Option<String> {
    let (path, fragment) = link.split_once('#').unwrap_or((link, ""));
    let path = path.split('?').next().unwrap_or_default();
    let target = if path.is_empty() {
        page.to_path_buf()
    } else {
        normalise(&page.parent().expect("a page's directory").join(path))
    };
    if !target.starts_with(book) {
        return Some(format!(
            "{link}: leaves the book (a link to the repository, not a page)"
        ));
    }
    if !target.is_file() {
        return Some(format!("{link}: no such file"));
    }
    let is_page = target.extension().is_some_and(|e| e == "html");
    if !fragment.is_empty() && is_page {
        let html = fs::read_to_string(&target).expect("a built page");
        if !html.contains(&format!(" id=\"{fragment}\"")) {
            return Some(format!("{link}: no #{fragment} on that page"));
        }
    }
    None
}

#[test]
fn every_chapter_is_in_the_book() {
    let Some(book) = book() else { return };
    let mut missing = Vec::new();
    for entry in fs::read_dir(root().join("docs/src")).expect("docs/src") {
        let name = entry
            .expect("an entry")
            .file_name()
            .into_string()
            .expect("UTF-8");
        if let Some(stem) = name.strip_suffix(".md") {
            if stem != "SUMMARY" && !book.join(format!("{stem}.html")).is_file() {
                missing.push(name);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "chapters SUMMARY.md does not list: {missing:?}"
    );
}

#[test]
fn every_link_of_the_book_resolves() {
    let Some(book) = book() else { return };
    let mut broken = Vec::new();
    let mut checked = 0;
    for entry in fs::read_dir(&book).expect("target/book") {
        let page = entry.expect("an entry").path();
        let name = page
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        // 404.html resolves its links from the site's root (`<base href="/">`), wherever it is
        // served from; every link in it is also on the other pages.
        if !name.ends_with(".html") || name == "404.html" {
            continue;
        }
        let html = fs::read_to_string(&page).expect("a built page");
        for link in attribute_values(&html, "href")
            .into_iter()
            .chain(attribute_values(&html, "src"))
        {
            if link.is_empty() || is_external(link) {
                continue;
            }
            checked += 1;
            if let Some(problem) = broken_in_book(&book, &page, link) {
                broken.push(format!("{name}: {problem}"));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} links found: is the book built?"
    );
    assert!(
        broken.is_empty(),
        "broken links in the book:\n{}",
        broken.join("\n")
    );
}

/// GitHub's id for a heading: lowercased, punctuation but `-` and `_` dropped, spaces as `-`.
fn github_slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The markdown links and images of `text`, outside code blocks and code spans: `](target)`.
fn markdown_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut fence = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        // Code spans hold examples, not links.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for (at, _) in prose.match_indices("](") {
            let rest = &prose[at + 2..];
            if let Some(end) = rest.find(')') {
                links.push(rest[..end].to_string());
            }
        }
    }
    links
}

/// The repository's markdown files outside the book, as GitHub shows them: the README, the
/// changelog and the READMEs of folders (not `target/`, not a dependency's).
fn repository_markdown() -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if !name.starts_with('.') && !matches!(&*name, "target" | "node_modules" | "dist") {
                    walk(&path, found);
                }
            } else if name.ends_with(".md") && !path.starts_with(root().join("docs/src")) {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&root(), &mut found);
    found.sort();
    found
}

/// The ids GitHub gives the headings of a markdown file.
fn github_anchors(markdown: &str) -> BTreeSet<String> {
    let mut fence = false;
    markdown
        .lines()
        .filter(|line| {
            if line.starts_with("```") {
                fence = !fence;
            }
            !fence && line.starts_with('#')
        })
        .map(|line| github_slug(line.trim_start_matches('#')))
        .collect()
}

/// What is wrong with `link` in the repository's markdown file `file`, if anything.
fn broken_in_repository(book: Option<&Path>, file: &Path, link: &str) -> Option<String> {
    let (path, fragment) = link.split_once('#').unwrap_or((link, ""));
    let target = if path.is_empty() {
        file.to_path_buf()
    } else {
        normalise(&file.parent().expect("a file's directory").join(path))
    };
    if !target.starts_with(root()) || !target.exists() {
        return Some(format!("{link}: no such file"));
    }
    if fragment.is_empty() || target.extension().is_none_or(|e| e != "md") {
        return None;
    }
    // A link into the book: its anchor as mdBook wrote the page.
    if let Ok(chapter) = target.strip_prefix(root().join("docs/src")) {
        let book = book?;
        let page = book.join(chapter.with_extension("html"));
        return broken_in_book(book, &page, &format!("#{fragment}"))
            .map(|problem| format!("{link}: {problem}"));
    }
    let text = fs::read_to_string(&target).expect("a markdown file");
    (!github_anchors(&text).contains(fragment))
        .then(|| format!("{link}: no such heading in {}", target.display()))
}

#[test]
fn every_link_of_the_readme_and_the_other_markdown_resolves() {
    let book = book();
    let files = repository_markdown();
    assert!(files.iter().any(|f| f.ends_with("README.md")));
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = fs::read_to_string(file).expect("a markdown file");
        for link in markdown_links(&text) {
            if is_external(&link) {
                continue;
            }
            checked += 1;
            if let Some(problem) = broken_in_repository(book.as_deref(), file, &link) {
                let name = file.strip_prefix(root()).unwrap_or(file);
                broken.push(format!("{}: {problem}", name.display()));
            }
        }
    }
    assert!(checked > 20, "only {checked} links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The checker itself: a missing file, a missing anchor and a link out of the book are caught.
#[test]
fn the_link_checker_catches_what_it_should() {
    let dir = common::TempDir::new("docs", "links");
    let book = dir.0.clone();
    fs::write(dir.path("a.html"), "<h1 id=\"here\">A</h1>").expect("a page");
    fs::write(dir.path("b.png"), "png").expect("an image");
    let page = book.join("a.html");
    assert_eq!(broken_in_book(&book, &page, "a.html#here"), None);
    assert_eq!(broken_in_book(&book, &page, "#here"), None);
    assert_eq!(broken_in_book(&book, &page, "b.png"), None);
    assert!(broken_in_book(&book, &page, "c.html").is_some());
    assert!(broken_in_book(&book, &page, "a.html#there").is_some());
    assert!(broken_in_book(&book, &page, "../README.md").is_some());
    assert_eq!(
        github_slug("Fleet safety: the plan and its guards"),
        "fleet-safety-the-plan-and-its-guards"
    );
    assert!(broken_in_repository(None, &root().join("README.md"), "docs/src/nothing.md").is_some());
    assert!(broken_in_repository(None, &root().join("README.md"), "#no-such-heading").is_some());
    assert_eq!(
        broken_in_repository(None, &root().join("README.md"), "#quick-start"),
        None
    );
    assert_eq!(
        markdown_links("see [a](x.md#y), `[no](z)` and ![i](p.png)\n```\n[no](w)\n```\n"),
        ["x.md#y", "p.png"]
    );
}
