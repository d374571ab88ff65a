//! The HTTP API's body table, in `src/edge/http/command.rs`'s module
//! comment: each operation's route and the fields its body takes,
//! generated from the method table (each row's route and request type,
//! whose schema says which fields are optional), as the OpenAPI document
//! and the TypeScript declarations are (`edge::schema`). The table sits
//! between [`BEGIN`] and [`END`]; a test compares it with what the types
//! give, and `BATON_BLESS=1 cargo test --lib edge::body_table` rewrites it.

use super::http::Input;
use super::schema::{ref_name, schemas, Schemas};
use serde_json::Value;

/// The line before the generated table.
pub const BEGIN: &str =
    "//! <!-- generated from the method table: BATON_BLESS=1 cargo test --lib edge::body_table -->";
/// The line after it.
pub const END: &str = "//! <!-- end of the generated body table -->";

/// The table's lines, one row per HTTP operation in the method table's
/// order, each a `//! ` line.
pub fn body_table() -> String {
    let Schemas {
        definitions,
        methods,
    } = schemas();
    let mut out = String::from("//! | route | body |\n//! |---|---|\n");
    for (method, request, ..) in &methods {
        let Some(operation) = method.http else {
            continue;
        };
        let (verb, path, input) = operation.route();
        let name = ref_name(request).expect("requests are named types");
        let fields = fields(&definitions[name], operation.path_field());
        let body = match input {
            Input::Path => "none".to_owned(),
            Input::Query => {
                let query: Vec<String> = fields.iter().map(|(f, _)| format!("{f}=")).collect();
                format!("none; `?{}` in the query", query.join("&"))
            }
            Input::Body if fields.is_empty() => "`{}`".to_owned(),
            Input::Body => {
                let fields: Vec<String> = (fields.iter())
                    .map(|(field, required)| format!("{field}{}", if *required { "" } else { "?" }))
                    .collect();
                format!("`{{ {} }}`", fields.join(", "))
            }
        };
        out.push_str(&format!("//! | `{} {path}` | {body} |\n", verb.as_str()));
    }
    out
}

/// A request schema's fields in their order, each with whether it is
/// required, but for the one the path fills.
fn fields(schema: &Value, path_field: Option<&str>) -> Vec<(String, bool)> {
    let required =
        |name: &str| (schema["required"].as_array()).is_some_and(|r| r.iter().any(|f| f == name));
    let properties = schema["properties"].as_object().into_iter().flatten();
    properties
        .map(|(name, _)| name)
        .filter(|name| Some(name.as_str()) != path_field)
        .map(|name| (name.clone(), required(name)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const COMMAND_RS: &str = "src/edge/http/command.rs";

    /// command.rs's table is the generated one (or, with `BATON_BLESS=1`,
    /// becomes it).
    #[test]
    fn command_rs_holds_the_generated_table() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(COMMAND_RS);
        let text = std::fs::read_to_string(&path).unwrap();
        let begin = text.find(BEGIN).expect("command.rs has the table's start") + BEGIN.len() + 1;
        let end = text.find(END).expect("command.rs has the table's end");
        let generated = format!("{}{}{}", &text[..begin], body_table(), &text[end..]);
        if std::env::var("BATON_BLESS").is_ok_and(|v| v == "1") {
            if generated != text {
                std::fs::write(&path, generated).unwrap();
            }
            return;
        }
        assert!(
            generated == text,
            "{COMMAND_RS}'s body table differs from the method table's; \
             run `BATON_BLESS=1 cargo test --lib edge::body_table` and review the diff"
        );
    }

    /// Contract §11's rows, as the contract gives their bodies.
    #[test]
    fn the_table_answers_the_steering_rows() {
        let table = body_table();
        for row in [
            "| `POST /v1/keys/{key}/pause` | `{ reason? }` |",
            "| `POST /v1/keys/{key}/resume` | `{}` |",
            "| `PUT /v1/keys/{key}/limit` | `{ limit? }` |",
            "| `POST /v1/groups/{group}/pause` | `{ reason? }` |",
            "| `POST /v1/groups/{group}/resume` | `{}` |",
        ] {
            assert!(table.contains(row), "no row {row} in:\n{table}");
        }
    }
}
