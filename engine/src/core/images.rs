//! Image codecs: reading an uploaded image (its kind and dimensions) and making scaled copies of
//! it. The engine decides which scales an image gets ([`crate::content::files`]); the pixel work
//! is the host's, behind [`ImageCodec`], the way the language model and the clock are: the
//! server uses the Rust codecs ([`RustCodec`], engine feature `image-codecs`, on by default), the
//! browser its own decoders (`createImageBitmap` and `OffscreenCanvas`, in host-wasm), which keeps
//! the Rust codecs out of the browser's wasm.
//!
//! A codec whose work is asynchronous (the browser's) answers [`ImageError::Pending`] for what it
//! has not done yet, and remembers it: the engine then answers [`EngineError::ImageWorkPending`]
//! having changed nothing, the host does the work, and runs the request again, which now finds
//! every answer ready.
//!
//! [`EngineError::ImageWorkPending`]: crate::core::error::EngineError::ImageWorkPending

/// The kinds of image the engine accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageKind {
    /// JPEG.
    Jpeg,
    /// PNG.
    Png,
    /// GIF.
    Gif,
    /// WebP.
    Webp,
}

impl ImageKind {
    /// The kind `bytes` start like (by their signature), if any.
    pub fn sniff(bytes: &[u8]) -> Option<ImageKind> {
        if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(ImageKind::Jpeg)
        } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(ImageKind::Png)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(ImageKind::Gif)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(ImageKind::Webp)
        } else {
            None
        }
    }

    /// Its media type.
    pub fn mime(self) -> &'static str {
        match self {
            ImageKind::Jpeg => "image/jpeg",
            ImageKind::Png => "image/png",
            ImageKind::Gif => "image/gif",
            ImageKind::Webp => "image/webp",
        }
    }

    /// The media type of a scale made from an image of this kind: a JPEG's scales are JPEG
    /// (quality 85), every other kind's PNG.
    pub fn scale_mime(self) -> &'static str {
        match self {
            ImageKind::Jpeg => "image/jpeg",
            _ => "image/png",
        }
    }
}

/// What reading an image found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageInfo {
    /// Its kind.
    pub kind: ImageKind,
    /// Pixels across.
    pub width: u32,
    /// Pixels down.
    pub height: u32,
}

/// Why a codec gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageError {
    /// The bytes are not an image the codec can decode; the text says why (it ends up in the
    /// 400 the client gets).
    Unreadable(String),
    /// The codec's work is asynchronous and not done yet: the host does it and runs the request
    /// again (see the module documentation).
    Pending,
}

/// The host's image decoders and encoders (see the module documentation).
pub trait ImageCodec: Send + Sync {
    /// Decode `bytes`: their kind and dimensions, or why they are not a JPEG, PNG, GIF or WebP
    /// image it can decode.
    fn read(&self, bytes: &[u8]) -> Result<ImageInfo, ImageError>;

    /// `bytes` (an image [`ImageCodec::read`] accepted, of kind `kind`) scaled to each of `sizes`
    /// (width, height; the engine gives them largest first, none twice), each encoded as
    /// [`ImageKind::scale_mime`] says. With `sizes` empty, `Ok` with nothing (a codec that kept
    /// something of `bytes` since `read` may let it go).
    fn scale(
        &self,
        bytes: &[u8],
        kind: ImageKind,
        sizes: &[(u32, u32)],
    ) -> Result<Vec<Vec<u8>>, ImageError>;
}

/// A codec that reads no image: every image upload is refused as unreadable. The default of a
/// build without the feature `image-codecs` whose host gives no codec.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoCodec;

impl ImageCodec for NoCodec {
    fn read(&self, _bytes: &[u8]) -> Result<ImageInfo, ImageError> {
        Err(ImageError::Unreadable(
            "this host has no image decoder".into(),
        ))
    }

    fn scale(
        &self,
        _bytes: &[u8],
        _kind: ImageKind,
        sizes: &[(u32, u32)],
    ) -> Result<Vec<Vec<u8>>, ImageError> {
        if sizes.is_empty() {
            return Ok(Vec::new());
        }
        Err(ImageError::Unreadable(
            "this host has no image decoder".into(),
        ))
    }
}

/// The codec of a host that gives none: the Rust codecs with the feature `image-codecs`, else
/// [`NoCodec`].
pub fn default_codec() -> std::sync::Arc<dyn ImageCodec> {
    #[cfg(feature = "image-codecs")]
    {
        std::sync::Arc::new(RustCodec::default())
    }
    #[cfg(not(feature = "image-codecs"))]
    {
        std::sync::Arc::new(NoCodec)
    }
}

#[cfg(feature = "image-codecs")]
pub use rust_codec::RustCodec;

#[cfg(feature = "image-codecs")]
mod rust_codec {
    use std::hash::{Hash, Hasher};
    use std::io::Cursor;
    use std::sync::Mutex;

    use image::{DynamicImage, ImageFormat};

    use super::{ImageCodec, ImageError, ImageInfo, ImageKind};

    /// The Rust codecs (the `image` crate): JPEG, PNG, GIF and WebP decoded; scales resized with
    /// a triangle filter, each from the one before it (largest first: much quicker than from the
    /// original, and as sharp at these ratios), encoded as JPEG at quality 85 or PNG.
    ///
    /// The image decoded by the last [`ImageCodec::read`] is kept until the [`ImageCodec::scale`]
    /// of the same bytes, so an upload is decoded once.
    #[derive(Default)]
    pub struct RustCodec {
        last: Mutex<Option<(u64, DynamicImage)>>,
    }

    fn fingerprint(bytes: &[u8]) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        bytes.hash(&mut h);
        h.finish()
    }

    fn decode(bytes: &[u8]) -> Result<(DynamicImage, ImageKind), ImageError> {
        let broken = |why: String| ImageError::Unreadable(why);
        let reader = image::ImageReader::new(Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|e| broken(e.to_string()))?;
        let format = reader
            .format()
            .ok_or_else(|| broken("unknown format".into()))?;
        let img = reader.decode().map_err(|e| broken(e.to_string()))?;
        let kind = match format {
            ImageFormat::Jpeg => ImageKind::Jpeg,
            ImageFormat::Png => ImageKind::Png,
            ImageFormat::Gif => ImageKind::Gif,
            ImageFormat::WebP => ImageKind::Webp,
            other => return Err(broken(format!("unsupported format {other:?}"))),
        };
        Ok((img, kind))
    }

    fn encode(img: &DynamicImage, kind: ImageKind) -> Result<Vec<u8>, ImageError> {
        let mut out = Cursor::new(Vec::new());
        let failed =
            |e: image::ImageError| ImageError::Unreadable(format!("encoding a scale failed: {e}"));
        if kind == ImageKind::Jpeg {
            let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85);
            img.to_rgb8().write_with_encoder(enc).map_err(failed)?;
        } else {
            img.write_to(&mut out, ImageFormat::Png).map_err(failed)?;
        }
        Ok(out.into_inner())
    }

    impl ImageCodec for RustCodec {
        fn read(&self, bytes: &[u8]) -> Result<ImageInfo, ImageError> {
            let (img, kind) = decode(bytes)?;
            let info = ImageInfo {
                kind,
                width: img.width(),
                height: img.height(),
            };
            if let Ok(mut last) = self.last.lock() {
                *last = Some((fingerprint(bytes), img));
            }
            Ok(info)
        }

        fn scale(
            &self,
            bytes: &[u8],
            kind: ImageKind,
            sizes: &[(u32, u32)],
        ) -> Result<Vec<Vec<u8>>, ImageError> {
            let kept = self.last.lock().ok().and_then(|mut l| l.take());
            if sizes.is_empty() {
                return Ok(Vec::new());
            }
            let img = match kept {
                Some((f, img)) if f == fingerprint(bytes) => img,
                _ => decode(bytes)?.0,
            };
            let mut out = Vec::with_capacity(sizes.len());
            let mut source: Option<DynamicImage> = None;
            for &(w, h) in sizes {
                let scaled = source.as_ref().unwrap_or(&img).resize_exact(
                    w,
                    h,
                    image::imageops::FilterType::Triangle,
                );
                out.push(encode(&scaled, kind)?);
                source = Some(scaled);
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_told_by_their_signature() {
        assert_eq!(
            ImageKind::sniff(b"\x89PNG\r\n\x1a\nrest"),
            Some(ImageKind::Png)
        );
        assert_eq!(
            ImageKind::sniff(&[0xFF, 0xD8, 0xFF, 0xE0]),
            Some(ImageKind::Jpeg)
        );
        assert_eq!(ImageKind::sniff(b"GIF89a...."), Some(ImageKind::Gif));
        assert_eq!(
            ImageKind::sniff(b"RIFF\0\0\0\0WEBPVP8 "),
            Some(ImageKind::Webp)
        );
        assert_eq!(ImageKind::sniff(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(ImageKind::sniff(b"not an image"), None);
    }

    #[test]
    fn no_codec_refuses_images_but_not_an_empty_scale_list() {
        assert!(matches!(
            NoCodec.read(b"\x89PNG\r\n\x1a\n"),
            Err(ImageError::Unreadable(_))
        ));
        assert_eq!(NoCodec.scale(b"", ImageKind::Png, &[]), Ok(Vec::new()));
        assert!(NoCodec.scale(b"", ImageKind::Png, &[(1, 1)]).is_err());
    }
}
