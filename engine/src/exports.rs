//! Exports of content as files: an RSS 2.0 feed of what the caller may view at and below an
//! object (newest first), the text made here; the JSON export is built by `api/export.rs` from
//! the object's representation.

use chrono::{DateTime, Utc};

use crate::context::Ctx;
use crate::error::Result;
use crate::model::fields::parse_datetime;
use crate::model::ContentRecord;
use crate::permissions::Access as _;
use crate::security::Permission;
use crate::tree;

/// Most items an RSS feed lists.
pub const RSS_ITEMS: usize = 50;

/// The objects below `obj` (not itself) the caller may view, newest first (by `effective`, else
/// `modified`), at most [`RSS_ITEMS`].
pub fn feed_items(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Vec<ContentRecord>> {
    let mut out = Vec::new();
    for o in tree::subtree(ctx, obj)? {
        if o.uid != obj.uid && ctx.permitted(Permission::View, &o)? {
            out.push(o);
        }
    }
    out.sort_by_key(|o| std::cmp::Reverse(published(o)));
    out.truncate(RSS_ITEMS);
    Ok(out)
}

/// When `rec` was published: its `effective` date, else its modification time.
pub fn published(rec: &ContentRecord) -> DateTime<Utc> {
    parse_datetime(rec.str_field("effective")).unwrap_or(rec.modified)
}

/// `s` with the five XML special characters escaped.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// The RSS 2.0 document of `obj` (the channel) and `items`.
pub fn rss(ctx: &Ctx<'_>, obj: &ContentRecord, language: &str, items: &[ContentRecord]) -> String {
    let rfc = |t: DateTime<Utc>| t.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<rss version=\"2.0\">\n  <channel>\n",
    );
    out.push_str(&format!("    <title>{}</title>\n", xml_escape(obj.title())));
    out.push_str(&format!(
        "    <description>{}</description>\n",
        xml_escape(obj.description())
    ));
    out.push_str(&format!(
        "    <language>{}</language>\n",
        xml_escape(language)
    ));
    out.push_str(&format!(
        "    <link>{}</link>\n",
        xml_escape(&ctx.url(&obj.path))
    ));
    let built = items.iter().map(published).max().unwrap_or(obj.modified);
    out.push_str(&format!(
        "    <lastBuildDate>{}</lastBuildDate>\n",
        rfc(built)
    ));
    for it in items {
        out.push_str("    <item>\n");
        out.push_str(&format!(
            "      <title>{}</title>\n",
            xml_escape(it.title())
        ));
        out.push_str(&format!(
            "      <link>{}</link>\n",
            xml_escape(&ctx.url(&it.path))
        ));
        out.push_str(&format!(
            "      <guid isPermaLink=\"false\">{}</guid>\n",
            xml_escape(&it.uid)
        ));
        out.push_str(&format!(
            "      <pubDate>{}</pubDate>\n",
            rfc(published(it))
        ));
        out.push_str(&format!(
            "      <description>{}</description>\n",
            xml_escape(it.description())
        ));
        out.push_str("    </item>\n");
    }
    out.push_str("  </channel>\n</rss>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_is_escaped() {
        assert_eq!(
            xml_escape("a<b & \"c\"'"),
            "a&lt;b &amp; &quot;c&quot;&apos;"
        );
    }
}
