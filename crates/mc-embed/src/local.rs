//! all-MiniLM-L6-v2 run in-process with candle on the CPU.
//!
//! The sentence-transformers recipe: word pieces truncated to 256 (the model's trained
//! `max_seq_length`, special tokens included), BERT's last hidden states averaged over the
//! real tokens (padding masked out), then scaled to unit length. Inputs are grouped by length
//! before batching so short texts are not padded up to a long neighbour.
//!
//! Everything here is CPU-bound and synchronous; [`crate::Embedder::embed`] runs it on a
//! blocking thread so it never stalls the async runtime.

use std::fmt;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config, HiddenAct, PositionEmbeddingType};
use tokenizers::{Tokenizer, TruncationParams};

use crate::error::{BoxError, EmbedError, Result};
use crate::model_dir::ModelFiles;
use crate::vector::l2_normalise;

/// Word pieces kept per input, special tokens included: the length the model was trained on.
pub const MAX_TOKENS: usize = 256;

/// Inputs run through the model together. Larger batches gain little on two cores, and
/// 32 × 256 tokens keeps the attention scores near 100 MB.
pub const BATCH_SIZE: usize = 32;

/// Width of all-MiniLM-L6-v2's vectors.
pub const DIMENSIONS: usize = 384;

/// all-MiniLM-L6-v2 loaded and ready; share it behind an `Arc`.
pub struct LocalEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    pad_id: u32,
    /// Held while a batch runs. candle already spreads one batch over every core, so two
    /// concurrent calls would only fight for them and double the ~100 MB peak; queued, each
    /// finishes sooner and memory stays bounded.
    run_gate: Mutex<()>,
    files: ModelFiles,
}

impl fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("dir", &self.files.dir)
            .finish_non_exhaustive()
    }
}

impl LocalEmbedder {
    /// The identity stored beside each vector it makes.
    pub const MODEL_ID: &'static str = "local:all-MiniLM-L6-v2";

    /// Loads the model from a directory holding `model.safetensors`, `tokenizer.json` and
    /// optionally `config.json`. Reads ~90 MB: call it once, at startup or on a blocking thread.
    pub fn load(dir: &Path) -> Result<Self> {
        let files = ModelFiles::locate(dir)?;
        let config = read_config(&files)?;
        if config.hidden_size != DIMENSIONS {
            return Err(EmbedError::UnsupportedModel {
                dir: files.dir.clone(),
                hidden_size: config.hidden_size,
            });
        }
        let mut tokenizer =
            Tokenizer::from_file(&files.tokenizer).map_err(|source| EmbedError::LoadModel {
                path: files.tokenizer.clone(),
                source,
            })?;
        let pad_id = tokenizer.get_padding().map_or(0, |p| p.pad_id);
        // The file ships with fixed padding to 128 and truncation at 128; we pad per batch
        // ourselves and truncate at the model's real limit.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|source| EmbedError::LoadModel {
                path: files.tokenizer.clone(),
                source,
            })?;
        let load_error = |source: candle_core::Error| EmbedError::LoadModel {
            path: files.weights.clone(),
            source: Box::new(source),
        };
        let weights =
            std::fs::read(&files.weights).map_err(|source| EmbedError::ReadModelFile {
                path: files.weights.clone(),
                source,
            })?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(load_error)?;
        let model = BertModel::load(vb, &config).map_err(load_error)?;
        Ok(Self {
            model,
            tokenizer,
            pad_id,
            run_gate: Mutex::new(()),
            files,
        })
    }

    /// One unit vector of [`DIMENSIONS`] per text, in order. Blocks for the whole run: about
    /// 14 ms for a lone 20-word sentence in a release build on two cores (see
    /// `examples/local_speed.rs`), so call it from a blocking thread.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|source| EmbedError::Inference {
                doing: "tokenizing",
                source,
            })?;
        let sequences: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| sequences.get(i).map_or(0, |s| s.len()));
        let mut vectors: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for batch in order.chunks(BATCH_SIZE) {
            let batch_sequences: Vec<&[u32]> = batch
                .iter()
                .filter_map(|&i| sequences.get(i).copied())
                .collect();
            let pooled = {
                // A panic in another call leaves no state behind the gate, so poison is moot.
                let _turn = self.run_gate.lock().unwrap_or_else(PoisonError::into_inner);
                self.embed_batch(&batch_sequences)?
            };
            for (&i, vector) in batch.iter().zip(pooled) {
                if let Some(slot) = vectors.get_mut(i) {
                    *slot = vector;
                }
            }
        }
        Ok(vectors)
    }

    /// Runs one padded batch and mean-pools it.
    fn embed_batch(&self, sequences: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let rows = sequences.len();
        let width = sequences.iter().map(|s| s.len()).max().unwrap_or(0).max(1);
        let mut ids = Vec::with_capacity(rows * width);
        let mut mask = Vec::with_capacity(rows * width);
        for sequence in sequences {
            ids.extend_from_slice(sequence);
            ids.resize(ids.len() + width - sequence.len(), self.pad_id);
            mask.extend(std::iter::repeat_n(1u32, sequence.len()));
            mask.resize(mask.len() + width - sequence.len(), 0);
        }
        let run = |doing: &'static str| {
            move |e: candle_core::Error| EmbedError::Inference {
                doing,
                source: Box::new(e) as BoxError,
            }
        };
        let device = &self.model.device;
        let ids = Tensor::from_vec(ids, (rows, width), device).map_err(run("building inputs"))?;
        let mask = Tensor::from_vec(mask, (rows, width), device).map_err(run("building inputs"))?;
        let token_types = ids.zeros_like().map_err(run("building inputs"))?;
        let hidden = self
            .model
            .forward(&ids, &token_types, Some(&mask))
            .map_err(run("running the model"))?;
        let pooled = mean_pool(&hidden, &mask).map_err(run("pooling"))?;
        let mut vectors = pooled.to_vec2::<f32>().map_err(run("reading vectors"))?;
        for vector in &mut vectors {
            l2_normalise(vector);
        }
        Ok(vectors)
    }
}

/// Averages hidden states `(rows, width, dims)` over the positions where `mask` is 1.
/// Every row has at least `[CLS]` and `[SEP]`, so no count is zero.
fn mean_pool(hidden: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
    let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
    let counts = mask.sum(1)?;
    summed.broadcast_div(&counts)
}

/// The model's configuration: `config.json` when present, else all-MiniLM-L6-v2's values.
fn read_config(files: &ModelFiles) -> Result<Config> {
    let Some(path) = &files.config else {
        return Ok(minilm_config());
    };
    let text = std::fs::read(path).map_err(|source| EmbedError::ReadModelFile {
        path: path.clone(),
        source,
    })?;
    serde_json::from_slice(&text).map_err(|source| EmbedError::ModelConfig {
        path: path.clone(),
        source,
    })
}

/// all-MiniLM-L6-v2's published BERT configuration, used when a directory has no
/// `config.json`: 6 layers of width 384 with 12 heads, feed-forward 1536, exact (erf) GELU,
/// the uncased 30,522-piece vocabulary, 512 positions, 2 token types, layer-norm eps 1e-12.
pub(crate) fn minilm_config() -> Config {
    Config {
        vocab_size: 30522,
        hidden_size: DIMENSIONS,
        num_hidden_layers: 6,
        num_attention_heads: 12,
        intermediate_size: 1536,
        hidden_act: HiddenAct::Gelu,
        hidden_dropout_prob: 0.1,
        max_position_embeddings: 512,
        type_vocab_size: 2,
        initializer_range: 0.02,
        layer_norm_eps: 1e-12,
        pad_token_id: 0,
        position_embedding_type: PositionEmbeddingType::Absolute,
        use_cache: true,
        classifier_dropout: None,
        model_type: Some("bert".to_owned()),
    }
}
