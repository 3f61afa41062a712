//! Exports of content as files: an RSS 2.0 feed of what the caller may view at and below an
//! object (newest first; in tree order on a Nick site) and the Markdown of a page's blocks, the text made here; the JSON
//! export is built by `api/export.rs` from the object's representation.

use chrono::{DateTime, Utc};

use crate::content::tree;
use crate::core::error::Result;
use crate::core::model::fields::parse_datetime;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access as _;
use crate::runtime::context::Ctx;

/// Most items an RSS feed lists.
pub const RSS_ITEMS: usize = 50;

/// The objects below `obj` (not itself) the caller may view, newest first (by `effective`, else
/// `modified`; a Nick site keeps the tree order), at most [`RSS_ITEMS`].
pub fn feed_items(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Vec<ContentRecord>> {
    let mut out = Vec::new();
    for o in tree::subtree(ctx, obj)? {
        if o.uid != obj.uid && ctx.permitted(Permission::View, &o)? {
            out.push(o);
        }
    }
    // Nick lists a feed's items in tree order, Plone newest first.
    if !ctx.profile().is_nick() {
        out.sort_by_key(|o| std::cmp::Reverse(published(o)));
    }
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

/// The channel's `managingEditor` (RSS 2.0: `email (name)`): the owner of `obj`, when the owner
/// is a user with an email address.
fn managing_editor(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<Option<String>> {
    let Some(user) = crate::people::auth::users::get(ctx, &obj.owner)? else {
        return Ok(None);
    };
    if user.email.is_empty() {
        return Ok(None);
    }
    Ok(Some(if user.fullname.is_empty() {
        user.email
    } else {
        format!("{} ({})", user.email, user.fullname)
    }))
}

/// The RSS 2.0 document of `obj` (the channel) and `items`. A Nick site's feed names the
/// channel's `managingEditor`, indents the items one step deeper and gives `guid` without
/// `isPermaLink`, as Nick's does.
pub fn rss(
    ctx: &Ctx<'_>,
    obj: &ContentRecord,
    language: &str,
    items: &[ContentRecord],
) -> Result<String> {
    let nick = ctx.profile().is_nick();
    let pad = if nick { "  " } else { "" };
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
    if nick {
        if let Some(editor) = managing_editor(ctx, obj)? {
            out.push_str(&format!(
                "    <managingEditor>{}</managingEditor>\n",
                xml_escape(&editor)
            ));
        }
    }
    let guid_attr = if nick { "" } else { " isPermaLink=\"false\"" };
    for it in items {
        out.push_str(&format!("{pad}    <item>\n"));
        out.push_str(&format!(
            "{pad}      <title>{}</title>\n",
            xml_escape(it.title())
        ));
        out.push_str(&format!(
            "{pad}      <link>{}</link>\n",
            xml_escape(&ctx.url(&it.path))
        ));
        out.push_str(&format!(
            "{pad}      <guid{guid_attr}>{}</guid>\n",
            xml_escape(&it.uid)
        ));
        out.push_str(&format!(
            "{pad}      <pubDate>{}</pubDate>\n",
            rfc(published(it))
        ));
        out.push_str(&format!(
            "{pad}      <description>{}</description>\n",
            xml_escape(it.description())
        ));
        out.push_str(&format!("{pad}    </item>\n"));
    }
    out.push_str("  </channel>\n</rss>\n");
    Ok(out)
}

/// The Markdown of an object without blocks (what [`markdown`] gives for it): its `title` as a
/// heading and its `description`.
pub fn markdown_without_blocks(title: &str, description: &str) -> String {
    let mut out = String::with_capacity(title.len() + description.len() + 5);
    out.push_str("# ");
    out.push_str(title);
    out.push('\n');
    if !description.trim().is_empty() {
        out.push('\n');
        out.push_str(description);
        out.push('\n');
    }
    out
}

/// The Markdown of `rec`'s blocks, in layout order: the title block as `# title`, the
/// description block as text, slate text with headings, lists, quotes, links and emphasis,
/// images as `![alt](url)`; other blocks are left out. An object without blocks (a folder, a
/// file) is its title as a heading and its description.
pub fn markdown(rec: &ContentRecord) -> String {
    use serde_json::Value;
    let blocks = rec.fields.get("blocks").and_then(Value::as_object);
    let order = rec
        .fields
        .get("blocks_layout")
        .and_then(|l| l.get("items"))
        .and_then(Value::as_array);
    let (Some(blocks), Some(order)) = (blocks, order) else {
        return markdown_without_blocks(rec.title(), rec.description());
    };
    let mut parts: Vec<String> = Vec::new();
    for id in order.iter().filter_map(Value::as_str) {
        let Some(b) = blocks.get(id) else { continue };
        let text = match b.get("@type").and_then(Value::as_str) {
            Some("title") => format!("# {}", rec.title()),
            Some("description") => rec.description().to_string(),
            Some("slate") => b
                .get("value")
                .and_then(Value::as_array)
                .map(|nodes| {
                    nodes
                        .iter()
                        .map(block_node)
                        .filter(|s| !s.is_empty())
                        .collect::<Vec<_>>()
                        .join("\n\n")
                })
                .unwrap_or_default(),
            Some("image") => {
                let url = b.get("url").and_then(Value::as_str).unwrap_or("");
                let alt = b.get("alt").and_then(Value::as_str).unwrap_or("");
                if url.is_empty() {
                    String::new()
                } else {
                    format!("![{alt}]({url})")
                }
            }
            _ => String::new(),
        };
        if !text.trim().is_empty() {
            parts.push(text);
        }
    }
    let mut out = parts.join("\n\n");
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// One top-level slate node as Markdown.
fn block_node(node: &serde_json::Value) -> String {
    let kind = node.get("type").and_then(|t| t.as_str()).unwrap_or("p");
    let children = || inline_children(node);
    match kind {
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
            let level = kind[1..].parse::<usize>().unwrap_or(2);
            format!("{} {}", "#".repeat(level), children())
        }
        "ul" | "ol" => list_items(node)
            .iter()
            .enumerate()
            .map(|(i, item)| {
                if kind == "ol" {
                    format!("{}. {item}", i + 1)
                } else {
                    format!("- {item}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
        "blockquote" => format!("> {}", children()),
        _ => children(),
    }
}

fn list_items(node: &serde_json::Value) -> Vec<String> {
    node.get("children")
        .and_then(|c| c.as_array())
        .map(|items| items.iter().map(inline_children).collect())
        .unwrap_or_default()
}

/// The inline Markdown of a node's children.
fn inline_children(node: &serde_json::Value) -> String {
    node.get("children")
        .and_then(|c| c.as_array())
        .map(|c| c.iter().map(inline).collect())
        .unwrap_or_default()
}

fn inline(node: &serde_json::Value) -> String {
    if let Some(text) = node.get("text").and_then(|t| t.as_str()) {
        return text.to_string();
    }
    let inner = inline_children(node);
    match node.get("type").and_then(|t| t.as_str()).unwrap_or("") {
        "link" => {
            let url = node
                .get("data")
                .and_then(|d| d.get("url"))
                .and_then(|u| u.as_str())
                .unwrap_or("");
            format!("[{inner}]({url})")
        }
        "strong" | "b" => format!("**{inner}**"),
        "em" | "i" => format!("*{inner}*"),
        "code" => format!("`{inner}`"),
        "del" | "s" => format!("~~{inner}~~"),
        _ => inner,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slate_becomes_markdown() {
        let node = serde_json::json!({"type": "p", "children": [
            {"text": "See "},
            {"type": "link", "data": {"url": "https://x.org"}, "children": [{"text": "x"}]},
            {"text": ", "}, {"type": "strong", "children": [{"text": "bold"}]},
            {"text": " and "}, {"type": "em", "children": [{"text": "it"}]}]});
        assert_eq!(
            block_node(&node),
            "See [x](https://x.org), **bold** and *it*"
        );
        let list = serde_json::json!({"type": "ol", "children": [
            {"type": "li", "children": [{"text": "a"}]},
            {"type": "li", "children": [{"text": "b"}]}]});
        assert_eq!(block_node(&list), "1. a\n2. b");
    }

    #[test]
    fn xml_is_escaped() {
        assert_eq!(
            xml_escape("a<b & \"c\"'"),
            "a&lt;b &amp; &quot;c&quot;&apos;"
        );
    }
}
