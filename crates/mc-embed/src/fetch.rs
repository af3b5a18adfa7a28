//! Fetching all-MiniLM-L6-v2 into a cache directory on first use, where the network allows.
//!
//! Optional: a model directory can always be filled by hand (or from the PyPI wheel). Nothing
//! here runs at build time or in tests against the real hub; tests point `base_url` at a
//! local server. Each file is written under a temporary name and renamed when complete, so an
//! interrupted download never leaves a truncated file that [`ModelFiles::locate`] would accept.

use std::path::Path;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use crate::error::{EmbedError, Result};
use crate::model_dir::{CONFIG_FILE, ModelFiles, TOKENIZER_FILE, WEIGHTS_FILE};
use crate::provider_error::describe;

/// Where the public copy of the model lives: `{HUB_URL}/{file}` downloads one file.
pub const HUB_URL: &str =
    "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/main";

/// Limit for one file: the weights are ~90 MB, so minutes on a slow link are normal.
const FILE_TIMEOUT: Duration = Duration::from_secs(600);

/// Makes sure `dir` holds the model's three files, downloading each missing one from
/// `base_url` (normally [`HUB_URL`]). Files already present are kept and not re-fetched.
pub async fn fetch_model(dir: &Path, base_url: &str) -> Result<ModelFiles> {
    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| EmbedError::WriteModelFile { path, source }
    };
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(write_error(dir))?;
    let client = reqwest::Client::builder()
        .timeout(FILE_TIMEOUT)
        .build()
        .map_err(|source| EmbedError::HttpClient { source })?;
    let base_url = base_url.trim_end_matches('/');
    for file in [CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE] {
        let target = dir.join(file);
        if target.is_file() {
            continue;
        }
        let url = format!("{base_url}/{file}");
        let partial = dir.join(format!(".{file}.part"));
        let downloaded = download(&client, &url, &partial).await;
        if downloaded.is_err() {
            // Best effort: a leftover part file is ignored and overwritten next time anyway.
            let _ = tokio::fs::remove_file(&partial).await;
        }
        downloaded?;
        tokio::fs::rename(&partial, &target)
            .await
            .map_err(write_error(&target))?;
    }
    ModelFiles::locate(dir)
}

/// Streams one file to `path`, failing on any non-success status.
async fn download(client: &reqwest::Client, url: &str, path: &Path) -> Result<()> {
    let transport = |source: reqwest::Error| {
        if source.is_timeout() {
            EmbedError::Timeout {
                url: url.to_owned(),
                after_ms: u64::try_from(FILE_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
            }
        } else {
            EmbedError::Request {
                url: url.to_owned(),
                source,
            }
        }
    };
    let mut response = client.get(url).send().await.map_err(transport)?;
    let status = response.status();
    if !status.is_success() {
        let body = response.bytes().await.unwrap_or_default();
        return Err(EmbedError::Status {
            url: url.to_owned(),
            status: status.as_u16(),
            message: describe(&body, None),
        });
    }
    let write_error = |source| EmbedError::WriteModelFile {
        path: path.to_path_buf(),
        source,
    };
    let mut out = tokio::fs::File::create(path).await.map_err(write_error)?;
    while let Some(chunk) = response.chunk().await.map_err(transport)? {
        out.write_all(&chunk).await.map_err(write_error)?;
    }
    out.flush().await.map_err(write_error)?;
    out.sync_all().await.map_err(write_error)
}
