//! Images decoded and scaled by the browser's own codecs (`createImageBitmap` and
//! `OffscreenCanvas`), so the engine's wasm carries no image decoder or encoder.
//!
//! The browser's image work is asynchronous and the engine's is not, so [`BrowserCodec`] answers
//! the engine from what it already knows and otherwise notes the work and answers
//! [`ImageError::Pending`]: the engine then answers 503 having changed nothing, the site runs the
//! noted work ([`BrowserCodec::run_jobs`]) and the request again, and the second run finds every
//! answer ready. [`ReplayEntropy`] makes the second run draw the same ids as the first, so that
//! a request gives the same answer whether or not it had to wait for the browser (the contract
//! scenarios compare ids across hosts).
//!
//! A scale's bytes are the browser's (its resampling and its JPEG and PNG encoders), so they
//! differ from the server's; the scale's dimensions, media type and the image's own bytes do not.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use engine::{Entropy, ImageCodec, ImageError, ImageInfo, ImageKind};
use js_sys::{Function, Promise, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    Blob, BlobPropertyBag, ImageBitmap, ImageBitmapOptions, ImageEncodeOptions, OffscreenCanvas,
    OffscreenCanvasRenderingContext2d, ResizeQuality,
};

/// The quality of JPEG scales, as the server's encoder uses it (85 of 100).
const JPEG_QUALITY: f64 = 0.85;

/// Which bytes: a hash and the length (the work is keyed by it, not by a copy of the bytes).
type Key = (u64, usize);

fn key_of(bytes: &[u8]) -> Key {
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    (h.finish(), bytes.len())
}

/// The scales of some bytes at some sizes, or why they could not be made.
type Scales = Result<Vec<Vec<u8>>, String>;

/// Work noted during a request, done by [`BrowserCodec::run_jobs`].
enum Job {
    Read(Vec<u8>),
    Scale(Vec<u8>, ImageKind, Vec<(u32, u32)>),
}

#[derive(Default)]
struct State {
    reads: HashMap<Key, Result<ImageInfo, String>>,
    scales: HashMap<(Key, Vec<(u32, u32)>), Scales>,
    jobs: Vec<Job>,
}

/// The engine's [`ImageCodec`] in the browser (see the module documentation).
#[derive(Default)]
pub struct BrowserCodec {
    state: Mutex<State>,
}

impl BrowserCodec {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the last run of the engine left work to do.
    pub fn has_jobs(&self) -> bool {
        !self.state().jobs.is_empty()
    }

    /// Do the noted work with the browser's codecs; its answers are kept for the next run.
    pub async fn run_jobs(&self) {
        let jobs = std::mem::take(&mut self.state().jobs);
        for job in jobs {
            match job {
                Job::Read(bytes) => {
                    let found = read(&bytes).await;
                    self.state().reads.insert(key_of(&bytes), found);
                }
                Job::Scale(bytes, kind, sizes) => {
                    let mut made = Vec::with_capacity(sizes.len());
                    let mut failed = None;
                    for &(w, h) in &sizes {
                        match scale(&bytes, kind, w, h).await {
                            Ok(b) => made.push(b),
                            Err(e) => {
                                failed = Some(e);
                                break;
                            }
                        }
                    }
                    let answer = match failed {
                        Some(e) => Err(e),
                        None => Ok(made),
                    };
                    self.state().scales.insert((key_of(&bytes), sizes), answer);
                }
            }
        }
    }

    /// Forget the answers kept for a request (it is over).
    pub fn forget(&self) {
        let mut s = self.state();
        s.reads.clear();
        s.scales.clear();
        s.jobs.clear();
    }
}

impl ImageCodec for BrowserCodec {
    fn read(&self, bytes: &[u8]) -> Result<ImageInfo, ImageError> {
        if ImageKind::sniff(bytes).is_none() {
            return Err(ImageError::Unreadable("unknown format".into()));
        }
        let mut s = self.state();
        match s.reads.get(&key_of(bytes)) {
            Some(found) => found.clone().map_err(ImageError::Unreadable),
            None => {
                s.jobs.push(Job::Read(bytes.to_vec()));
                Err(ImageError::Pending)
            }
        }
    }

    fn scale(
        &self,
        bytes: &[u8],
        kind: ImageKind,
        sizes: &[(u32, u32)],
    ) -> Result<Vec<Vec<u8>>, ImageError> {
        if sizes.is_empty() {
            return Ok(Vec::new());
        }
        let mut s = self.state();
        match s.scales.get(&(key_of(bytes), sizes.to_vec())) {
            Some(made) => made.clone().map_err(ImageError::Unreadable),
            None => {
                s.jobs
                    .push(Job::Scale(bytes.to_vec(), kind, sizes.to_vec()));
                Err(ImageError::Pending)
            }
        }
    }
}

fn text(e: &JsValue) -> String {
    Reflect::get(e, &"message".into())
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "the browser could not decode it".into())
}

/// `createImageBitmap(blob of bytes, options)`, in a window or a worker.
async fn bitmap(bytes: &[u8], opts: Option<&ImageBitmapOptions>) -> Result<ImageBitmap, String> {
    let global = js_sys::global();
    let create = Reflect::get(&global, &"createImageBitmap".into())
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
        .ok_or("this JavaScript environment has no image decoder (createImageBitmap)")?;
    let parts = js_sys::Array::of1(&Uint8Array::from(bytes));
    let bag = BlobPropertyBag::new();
    if let Some(kind) = ImageKind::sniff(bytes) {
        bag.set_type(kind.mime());
    }
    let blob = Blob::new_with_u8_array_sequence_and_options(&parts, &bag).map_err(|e| text(&e))?;
    let promise = match opts {
        Some(o) => create.call2(&global, &blob, o),
        None => create.call1(&global, &blob),
    }
    .map_err(|e| text(&e))?;
    JsFuture::from(Promise::from(promise))
        .await
        .map_err(|e| text(&e))?
        .dyn_into::<ImageBitmap>()
        .map_err(|_| "createImageBitmap gave no ImageBitmap".to_string())
}

async fn read(bytes: &[u8]) -> Result<ImageInfo, String> {
    let kind = ImageKind::sniff(bytes).ok_or("unknown format")?;
    let bmp = bitmap(bytes, None).await?;
    let info = ImageInfo {
        kind,
        width: bmp.width(),
        height: bmp.height(),
    };
    bmp.close();
    Ok(info)
}

/// The image scaled to `w` x `h` by the browser (high-quality resampling), encoded as
/// [`ImageKind::scale_mime`] says.
async fn scale(bytes: &[u8], kind: ImageKind, w: u32, h: u32) -> Result<Vec<u8>, String> {
    let opts = ImageBitmapOptions::new();
    opts.set_resize_width(w);
    opts.set_resize_height(h);
    opts.set_resize_quality(ResizeQuality::High);
    let bmp = bitmap(bytes, Some(&opts)).await?;
    let canvas = OffscreenCanvas::new(w, h).map_err(|e| text(&e))?;
    let ctx = canvas
        .get_context("2d")
        .map_err(|e| text(&e))?
        .and_then(|c| c.dyn_into::<OffscreenCanvasRenderingContext2d>().ok())
        .ok_or("no 2d context on an OffscreenCanvas")?;
    ctx.draw_image_with_image_bitmap(&bmp, 0.0, 0.0)
        .map_err(|e| text(&e))?;
    bmp.close();
    let enc = ImageEncodeOptions::new();
    enc.set_type(kind.scale_mime());
    if kind == ImageKind::Jpeg {
        enc.set_quality(JPEG_QUALITY);
    }
    let blob: Blob = JsFuture::from(
        canvas
            .convert_to_blob_with_options(&enc)
            .map_err(|e| text(&e))?,
    )
    .await
    .map_err(|e| text(&e))?
    .dyn_into()
    .map_err(|_| "convertToBlob gave no Blob".to_string())?;
    let buf = JsFuture::from(blob.array_buffer())
        .await
        .map_err(|e| text(&e))?;
    Ok(Uint8Array::new(&buf).to_vec())
}

/// Randomness that can give a request's run again the bytes its earlier run drew: wraps the
/// engine's entropy; [`ReplayEntropy::start`] begins a request, [`ReplayEntropy::rewind`] makes
/// the next draws repeat those since then (see the module documentation).
pub struct ReplayEntropy {
    inner: Arc<dyn Entropy>,
    state: Mutex<(Vec<u8>, VecDeque<u8>)>,
}

impl ReplayEntropy {
    /// Wrap `inner`.
    pub fn new(inner: Arc<dyn Entropy>) -> Self {
        ReplayEntropy {
            inner,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, (Vec<u8>, VecDeque<u8>)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request begins: nothing to repeat, nothing drawn yet.
    pub fn start(&self) {
        let mut s = self.state();
        s.0.clear();
        s.1.clear();
    }

    /// The request runs again: its draws repeat those of the run before.
    pub fn rewind(&self) {
        let mut s = self.state();
        let (drawn, queued) = &mut *s;
        let mut again: VecDeque<u8> = std::mem::take(drawn).into();
        again.extend(queued.drain(..));
        *queued = again;
    }
}

impl Entropy for ReplayEntropy {
    fn fill(&self, buf: &mut [u8]) {
        let mut s = self.state();
        let (drawn, queued) = &mut *s;
        let n = queued.len().min(buf.len());
        for (b, q) in buf.iter_mut().zip(queued.drain(..n)) {
            *b = q;
        }
        if n < buf.len() {
            self.inner.fill(&mut buf[n..]);
        }
        drawn.extend_from_slice(buf);
    }

    fn uid(&self) -> uuid::Uuid {
        let mut s = self.state();
        let (drawn, queued) = &mut *s;
        let uid = if queued.len() >= 16 {
            let mut b = [0u8; 16];
            for (x, q) in b.iter_mut().zip(queued.drain(..16)) {
                *x = q;
            }
            uuid::Uuid::from_bytes(b)
        } else {
            self.inner.uid()
        };
        drawn.extend_from_slice(uid.as_bytes());
        uid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewound_run_draws_the_same_bytes() {
        let e = ReplayEntropy::new(Arc::new(engine::SeededEntropy::new(7)));
        e.start();
        let mut first = [0u8; 20];
        e.fill(&mut first);
        e.rewind();
        let mut again = [0u8; 20];
        e.fill(&mut again);
        assert_eq!(first, again);
        let mut next = [0u8; 20];
        e.fill(&mut next);
        assert_ne!(first, next);
        e.start();
        let (a, b) = (e.uid(), e.uuid());
        e.rewind();
        assert_eq!((e.uid(), e.uuid()), (a, b));
        e.start();
        let mut fresh = [0u8; 20];
        e.fill(&mut fresh);
        assert_ne!(fresh, first);
    }
}
