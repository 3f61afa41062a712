//! Validation of Volto blocks: `blocks` maps block ids to block objects with a string `@type`;
//! `blocks_layout.items` lists block ids in order. A `slate` block carries `value` (rich-text nodes)
//! and `plaintext`.

use serde_json::Value;

use crate::core::error::{EngineError, Result};

fn bad(msg: String) -> EngineError {
    EngineError::BadRequest(msg)
}

/// Check a `blocks` value.
pub fn validate_blocks(v: &Value) -> Result<()> {
    let map = v.as_object().ok_or_else(|| {
        bad("Field 'blocks' must be an object mapping block ids to blocks".into())
    })?;
    for (id, block) in map {
        if id.is_empty() {
            return Err(bad("Field 'blocks' has an empty block id".into()));
        }
        let obj = block
            .as_object()
            .ok_or_else(|| bad(format!("Block '{id}' must be an object")))?;
        let ty = obj
            .get("@type")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("Block '{id}' must have a string '@type'")))?;
        if ty == "slate" {
            if let Some(value) = obj.get("value") {
                let nodes = value
                    .as_array()
                    .ok_or_else(|| bad(format!("Slate block '{id}': 'value' must be an array")))?;
                for n in nodes {
                    validate_slate_node(id, n, 0)?;
                }
            }
            if let Some(p) = obj.get("plaintext") {
                if !p.is_string() {
                    return Err(bad(format!(
                        "Slate block '{id}': 'plaintext' must be a string"
                    )));
                }
            }
        }
    }
    Ok(())
}

fn validate_slate_node(id: &str, n: &Value, depth: usize) -> Result<()> {
    if depth > 64 {
        return Err(bad(format!(
            "Slate block '{id}': nodes are nested too deeply"
        )));
    }
    let obj = n
        .as_object()
        .ok_or_else(|| bad(format!("Slate block '{id}': every node must be an object")))?;
    if let Some(t) = obj.get("text") {
        if !t.is_string() {
            return Err(bad(format!("Slate block '{id}': 'text' must be a string")));
        }
    }
    if let Some(children) = obj.get("children") {
        let arr = children
            .as_array()
            .ok_or_else(|| bad(format!("Slate block '{id}': 'children' must be an array")))?;
        for c in arr {
            validate_slate_node(id, c, depth + 1)?;
        }
    }
    Ok(())
}

/// Check a `blocks_layout` value.
pub fn validate_layout(v: &Value) -> Result<()> {
    let items = v
        .as_object()
        .and_then(|o| o.get("items"))
        .and_then(Value::as_array)
        .ok_or_else(|| bad("Field 'blocks_layout' must be {\"items\": [block ids]}".into()))?;
    if items.iter().any(|i| !i.is_string()) {
        return Err(bad(
            "Field 'blocks_layout.items' must contain only block ids (strings)".into(),
        ));
    }
    Ok(())
}

/// Check that every id in `blocks_layout.items` names a block in `blocks`.
pub fn check_consistency(blocks: &Value, layout: &Value) -> Result<()> {
    let (Some(map), Some(items)) = (
        blocks.as_object(),
        layout.get("items").and_then(Value::as_array),
    ) else {
        return Ok(());
    };
    for id in items.iter().filter_map(Value::as_str) {
        if !map.contains_key(id) {
            return Err(bad(format!(
                "blocks_layout lists block '{id}', which is not in blocks"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slate_blocks_are_checked() {
        let ok = json!({"b1": {"@type": "slate", "plaintext": "hi",
            "value": [{"type": "p", "children": [{"text": "hi"}]}]}});
        assert!(validate_blocks(&ok).is_ok());
        assert!(validate_blocks(&json!({"b1": {"@type": 3}})).is_err());
        assert!(validate_blocks(&json!({"b1": {"@type": "slate", "value": "x"}})).is_err());
        assert!(validate_blocks(&json!([1])).is_err());
    }

    #[test]
    fn layout_must_reference_existing_blocks() {
        let blocks = json!({"a": {"@type": "title"}});
        assert!(check_consistency(&blocks, &json!({"items": ["a"]})).is_ok());
        assert!(check_consistency(&blocks, &json!({"items": ["a", "b"]})).is_err());
        assert!(validate_layout(&json!({"items": [1]})).is_err());
    }
}
