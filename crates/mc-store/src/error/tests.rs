use super::*;

fn sqlite_error(code: i32) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
}

#[test]
fn busy_is_classified_and_retryable() {
    let err = StoreError::sqlite("appending")(sqlite_error(rusqlite::ffi::SQLITE_BUSY));
    assert!(matches!(
        err,
        StoreError::Busy {
            doing: "appending",
            ..
        }
    ));
    assert!(err.is_retryable());
}

#[test]
fn file_errors_name_the_file() {
    let path = Path::new("/data/context.db");
    let err =
        StoreError::sqlite("reading")(sqlite_error(rusqlite::ffi::SQLITE_NOTADB)).at_path(path);
    assert!(matches!(&err, StoreError::Corrupt { path: p, .. } if p == path));
    let text = err.to_string();
    assert!(text.contains("/data/context.db"), "{text}");
    assert!(text.contains("move the file aside"), "{text}");
    assert!(!err.is_retryable());

    let err =
        StoreError::sqlite("reading")(sqlite_error(rusqlite::ffi::SQLITE_CONSTRAINT)).at_path(path);
    assert!(matches!(
        err,
        StoreError::Sqlite {
            doing: "reading",
            ..
        }
    ));
}

#[test]
fn a_read_only_file_and_a_full_disk_name_the_file_and_the_fix() {
    let path = Path::new("/data/context.db");
    let err =
        StoreError::sqlite("appending")(sqlite_error(rusqlite::ffi::SQLITE_READONLY)).at_path(path);
    assert!(matches!(&err, StoreError::ReadOnly { path: p, .. } if p == path));
    let text = err.to_string();
    assert!(
        text.starts_with("the store at /data/context.db is read-only: "),
        "{text}"
    );
    assert!(!err.is_retryable());

    let err =
        StoreError::sqlite("appending")(sqlite_error(rusqlite::ffi::SQLITE_FULL)).at_path(path);
    let text = err.to_string();
    assert!(
        text.starts_with("the disk holding the store at /data/context.db is full: "),
        "{text}"
    );
    assert!(text.contains("free some space"), "{text}");
    assert!(!err.is_retryable());
}

#[test]
fn fence_message_says_what_to_do() {
    let err = StoreError::SchemaTooNew {
        path: PathBuf::from("/data/context.db"),
        found: 7,
        supported: 1,
    };
    assert_eq!(
        err.to_string(),
        "/data/context.db has schema v7 but this magic-context supports up to v1; upgrade \
         magic-context (or point MAGIC_CONTEXT_DATA_DIR elsewhere); nothing was changed"
    );
}
