//! A model2vec folder written from a word list: the model `ouro bench --recall` and the tests
//! load through the same code as a downloaded one (no weights ship with ouro).

use std::io;
use std::path::Path;

use serde_json::{Map, Value, json};

/// Writes `config.json`, `tokenizer.json` (a lower-casing word-level tokenizer) and
/// `model.safetensors` (one f32 row per word, `[UNK]` first) into `dir`. Every vector has the
/// same length.
pub fn write_model2vec(dir: &Path, words: &[(&str, Vec<f32>)]) -> io::Result<()> {
    let dim = words.first().map_or(1, |(_, v)| v.len());
    if words.iter().any(|(_, v)| v.len() != dim) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "every word needs a vector of the same length",
        ));
    }
    std::fs::create_dir_all(dir)?;
    let mut vocab = Map::new();
    vocab.insert("[UNK]".into(), json!(0));
    for (i, (word, _)) in words.iter().enumerate() {
        vocab.insert(word.to_lowercase(), json!(i + 1));
    }
    let tokenizer = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": null,
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": Value::Object(vocab), "unk_token": "[UNK]"}
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string())?;
    std::fs::write(
        dir.join("config.json"),
        json!({"model_type": "model2vec", "normalize": true, "hidden_dim": dim}).to_string(),
    )?;
    let rows = words.len() + 1;
    let mut data: Vec<u8> = Vec::with_capacity(rows * dim * 4);
    data.extend(std::iter::repeat_n(0u8, dim * 4));
    for (_, vector) in words {
        data.extend(vector.iter().flat_map(|x| x.to_le_bytes()));
    }
    let mut header = json!({"embeddings": {"dtype": "F32", "shape": [rows, dim], "data_offsets": [0, data.len()]}})
        .to_string();
    // The format pads its JSON header with spaces to a multiple of 8 bytes.
    while !header.len().is_multiple_of(8) {
        header.push(' ');
    }
    let mut file = Vec::with_capacity(8 + header.len() + data.len());
    file.extend((header.len() as u64).to_le_bytes());
    file.extend(header.as_bytes());
    file.extend(data);
    std::fs::write(dir.join("model.safetensors"), file)
}
