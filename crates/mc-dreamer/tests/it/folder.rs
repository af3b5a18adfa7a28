//! The read-only project access refuses what it must: paths out of the root, links out of
//! it, files over the cap; and lists what git would, ignored files left out.

use std::process::Command;

use mc_dreamer::{DreamerError, ProjectFolder};

use crate::fixture::write_project;

#[test]
fn paths_that_climb_out_or_are_absolute_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let folder = ProjectFolder::open(dir.path(), 1_000).unwrap();
    for path in ["../etc/passwd", "src/../../x", "/etc/passwd", ""] {
        let error = folder.read_text(path).unwrap_err();
        assert!(
            matches!(error, DreamerError::OutsideProject { .. }),
            "{path}: {error}"
        );
    }
    assert_eq!(
        folder.exists("src/../src/net.rs").ok(),
        None,
        "`..` is refused even when it comes back"
    );
    assert!(
        folder
            .read_text("src/net.rs")
            .unwrap()
            .contains("MAX_RETRIES")
    );
    assert!(!folder.exists("src/gone.rs").unwrap());
}

#[cfg(unix)]
#[test]
fn a_link_out_of_the_project_is_refused_and_a_link_inside_is_followed() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "key").unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("leak.txt"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("src/net.rs"), dir.path().join("net.rs")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("nowhere"), dir.path().join("dangling")).unwrap();
    let folder = ProjectFolder::open(dir.path(), 1_000).unwrap();
    for path in ["leak.txt", "out/secret.txt", "dangling"] {
        let error = folder.read_text(path).unwrap_err();
        assert!(
            matches!(error, DreamerError::OutsideProject { .. }),
            "{path}: {error}"
        );
    }
    assert!(folder.read_text("net.rs").unwrap().contains("send_once"));
    let listed = folder.list_files().unwrap();
    assert!(
        !listed.iter().any(|file| file.contains("secret")),
        "{listed:?}"
    );
}

#[test]
fn files_over_the_cap_are_refused_with_their_size() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    std::fs::write(dir.path().join("big.log"), vec![b'x'; 2_001]).unwrap();
    let folder = ProjectFolder::open(dir.path(), 2_000).unwrap();
    let error = folder.read_text("big.log").unwrap_err();
    assert!(
        matches!(
            error,
            DreamerError::TooLarge {
                bytes: 2_001,
                cap: 2_000,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "`big.log` is 2001 bytes, over the 2000-byte cap on files the dreamer reads"
    );
}

#[test]
fn listing_honours_gitignore_in_a_repository_and_skips_hidden_folders_outside_one() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    std::fs::create_dir_all(dir.path().join("target/debug")).unwrap();
    std::fs::write(dir.path().join("target/debug/out.rs"), "fn built() {}").unwrap();
    std::fs::create_dir_all(dir.path().join(".cache")).unwrap();
    std::fs::write(dir.path().join(".cache/x.rs"), "fn cached() {}").unwrap();
    std::fs::write(dir.path().join(".gitignore"), "target/\n.cache/\n").unwrap();
    let folder = ProjectFolder::open(dir.path(), 10_000).unwrap();
    let walked = folder.list_files().unwrap();
    assert_eq!(
        walked,
        [
            "README.md",
            "src/config.rs",
            "src/net.rs",
            "target/debug/out.rs"
        ],
        "outside a repository only hidden folders are skipped"
    );
    let init = Command::new("git")
        .arg("-C")
        .arg(dir.path())
        .args(["init", "-q"])
        .status()
        .unwrap();
    assert!(init.success());
    assert_eq!(
        folder.list_files().unwrap(),
        [".gitignore", "README.md", "src/config.rs", "src/net.rs"]
    );
}
