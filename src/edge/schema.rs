//! The OpenAPI document's schemas and the TypeScript declarations, generated
//! from the edge's types (through [`METHODS`]), so neither can drift from
//! what Baton decodes and answers.
//!
//! `static/openapi.json` is partly written by hand (the prose: summaries,
//! descriptions, the shared responses and parameters) and partly generated:
//! every schema under `components.schemas`, and in each API operation its
//! `requestBody` and its 200 reply's schema. `js/index.d.ts` has one
//! generated section, between [`TS_BEGIN`] and [`TS_END`]: every wire type,
//! `BatonService` (the default entrypoint's methods) and each Durable
//! Object class's RPC interface (`CoordinatorRpc`, ...: the row's `object`
//! method, its positional arguments typed by the request's fields). A test compares
//! both files with what the types give and fails on any difference;
//! `BATON_BLESS=1 cargo test --lib edge::schema` rewrites them.

use super::http::{Endpoint, ErrorReply, Operation, ROUTES};
use super::methods::{Arg, Method, ObjectMethod, METHODS};
use schemars::generate::SchemaSettings;
use schemars::SchemaGenerator;
use serde_json::{json, Map, Value};

/// Where a reference points: the OpenAPI document's schemas.
const DEFINITIONS_PATH: &str = "/components/schemas";

/// The first line of `js/index.d.ts`'s generated section.
pub const TS_BEGIN: &str =
    "// --- Wire types, generated from src/edge (BATON_BLESS=1 cargo test --lib edge::schema) ---";
/// The line after it.
pub const TS_END: &str = "// --- End of the generated wire types ---";

/// Requests are described as Baton reads them, replies as it writes them
/// (an optional reply field is absent, never `null`).
fn generator(serialize: bool) -> SchemaGenerator {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.definitions_path = DEFINITIONS_PATH.into();
        s.meta_schema = None;
    });
    let settings = if serialize {
        settings.for_serialize()
    } else {
        settings.for_deserialize()
    };
    settings.into_generator()
}

/// The schemas of every method, by name: requests, replies and what they use.
pub struct Schemas {
    pub definitions: Map<String, Value>,
    /// Per method (in [`METHODS`] order): request, reply and HTTP reply references.
    pub methods: Vec<(Method, Value, Value, Value)>,
}

pub fn schemas() -> Schemas {
    let mut requests = generator(false);
    let mut replies = generator(true);
    let mut methods = Vec::new();
    for method in METHODS {
        let request = (method.request)(&mut requests).to_value();
        let reply = (method.reply)(&mut replies).to_value();
        let http_reply = method
            .http_reply
            .map_or(reply.clone(), |f| f(&mut replies).to_value());
        methods.push((*method, request, reply, http_reply));
    }
    replies.subschema_for::<ErrorReply>();
    let mut definitions = requests.take_definitions(true);
    for schema in definitions.values_mut() {
        tidy(schema, false);
    }
    for (name, mut schema) in replies.take_definitions(true) {
        tidy(&mut schema, true);
        if let Some(existing) = definitions.get(&name) {
            assert_eq!(
                existing, &schema,
                "{name} is described differently as a request and as a reply"
            );
        }
        definitions.insert(name, schema);
    }
    Schemas {
        definitions,
        methods,
    }
}

/// Doc comments are wrapped for Rust; a description is one paragraph. A
/// reply's optional field is left out when it has no value, never `null`.
fn tidy(schema: &mut Value, reply: bool) {
    match schema {
        Value::Object(object) => {
            if let Some(Value::String(text)) = object.get_mut("description") {
                *text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            }
            let required: Vec<Value> = object
                .get("required")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if let (true, Some(Value::Object(properties))) = (reply, object.get_mut("properties")) {
                for (name, property) in properties.iter_mut() {
                    if !required.contains(&Value::String(name.clone())) {
                        drop_null(property);
                    }
                }
            }
            for value in object.values_mut() {
                tidy(value, reply);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| tidy(item, reply)),
        _ => {}
    }
}

/// `T | null` becomes `T`.
fn drop_null(property: &mut Value) {
    let Some(options) = property.get_mut("anyOf").and_then(Value::as_array_mut) else {
        return;
    };
    options.retain(|option| option != &json!({ "type": "null" }));
    if options.len() == 1 {
        let only = options.remove(0);
        let object = property.as_object_mut().expect("anyOf lives in an object");
        object.retain(|key, _| key != "anyOf");
        if let Value::Object(only) = only {
            for (key, value) in only {
                object.insert(key, value);
            }
        }
    }
}

pub(super) fn ref_name(reference: &Value) -> Option<&str> {
    reference["$ref"]
        .as_str()?
        .strip_prefix("#/components/schemas/")
}

/// The route's parameter (`key`, `group`), if its template has one.
fn path_field(template: &str) -> Option<&str> {
    let start = template.find('{')?;
    let end = template.find('}')?;
    Some(&template[start + 1..end])
}

/// The OpenAPI document: `document` with every generated part replaced by
/// what the types give. An API route missing from `paths` gets a skeleton
/// to fill in by hand.
pub fn openapi(mut document: Value) -> Value {
    let Schemas {
        mut definitions,
        methods,
    } = schemas();
    for route in ROUTES {
        let Endpoint::Api(operation) = route.endpoint else {
            continue;
        };
        let (method, request, _, reply) = methods
            .iter()
            .find(|(m, ..)| m.http == Some(operation))
            .unwrap_or_else(|| panic!("{operation:?} is in no entry of METHODS"));
        let verb = route.method.as_str().to_lowercase();
        let item = &mut document["paths"][route.path];
        if item.is_null() {
            *item = skeleton(route.path, method.name, operation);
        }
        let op = &mut item[verb.as_str()];
        if operation.has_body() {
            let request_name = ref_name(request).expect("requests are named types");
            let body_name = format!("{request_name}Body");
            let mut body = definitions[request_name].clone();
            if let Some(field) = path_field(route.path) {
                if let Some(properties) = body["properties"].as_object_mut() {
                    properties.retain(|name, _| name != field);
                }
                if let Some(required) = body["required"].as_array_mut() {
                    required.retain(|r| r != field);
                }
            }
            definitions.insert(body_name.clone(), body);
            op["requestBody"] = json!({
                "required": true,
                "content": { "application/json": {
                    "schema": { "$ref": format!("#/components/schemas/{body_name}") },
                } },
            });
        }
        op["responses"]["200"]["content"]["application/json"]["schema"] = reply.clone();
    }
    document["components"]["schemas"] = Value::Object(sorted(definitions));
    document
}

fn sorted(map: Map<String, Value>) -> Map<String, Value> {
    let mut entries: Vec<_> = map.into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.into_iter().collect()
}

/// A path item for a route the document does not describe yet.
fn skeleton(path: &str, name: &str, operation: Operation) -> Value {
    let verb = operation.route().0.as_str().to_lowercase();
    let mut item = Map::new();
    if let Some(field) = path_field(path) {
        item.insert(
            "parameters".into(),
            json!([{ "$ref": format!("#/components/parameters/{field}") }]),
        );
    }
    let mut responses = json!({
        "200": { "description": "TODO: the reply", "content": { "application/json": {} } },
        "400": { "$ref": "#/components/responses/BadInput" },
        "401": { "$ref": "#/components/responses/Unauthorized" },
        "405": { "$ref": "#/components/responses/MethodNotAllowed" },
    });
    if operation.has_body() {
        responses["413"] = json!({ "$ref": "#/components/responses/PayloadTooLarge" });
        responses["415"] = json!({ "$ref": "#/components/responses/UnsupportedMediaType" });
    }
    responses["500"] = json!({ "$ref": "#/components/responses/Internal" });
    responses["503"] = json!({ "$ref": "#/components/responses/NotConfigured" });
    item.insert(
        verb,
        json!({
            "operationId": name,
            "tags": ["TODO"],
            "summary": "TODO",
            "description": format!("`{name}`."),
            "responses": responses,
        }),
    );
    Value::Object(item)
}

/// The generated section of `js/index.d.ts`, from [`TS_BEGIN`] to [`TS_END`].
pub fn typescript() -> String {
    let Schemas {
        definitions,
        methods,
    } = schemas();
    let mut out = format!("{TS_BEGIN}\n");
    for (name, schema) in sorted(definitions.clone()) {
        if name == "Error" {
            continue; // HTTP only.
        }
        out.push('\n');
        out.push_str(&doc_comment(&schema, ""));
        out.push_str(&format!("export type {name} = {};\n", ts(&schema, "")));
    }
    out.push_str(
        "\n/** The service binding to Baton's Worker: its default entrypoint (contract §2, §7). */\n",
    );
    out.push_str("export interface BatonService {\n");
    for (method, request, reply, _) in &methods {
        out.push_str(&format!(
            "  {}(input: {}): Promise<{}>;\n",
            method.name,
            ts(request, "  "),
            ts(reply, "  ")
        ));
    }
    out.push_str("}\n");
    out.push_str(&object_interfaces(&definitions, &methods));
    out.push_str(&format!("{TS_END}\n"));
    out
}

/// Every Durable Object class's RPC interface, `<Class>Rpc`, in the
/// table's order: one method per row with an `object` column.
fn object_interfaces(
    definitions: &Map<String, Value>,
    methods: &[(Method, Value, Value, Value)],
) -> String {
    let mut classes: Vec<&str> = Vec::new();
    for class in methods
        .iter()
        .filter_map(|(m, ..)| m.object)
        .map(|o| o.class)
    {
        if !classes.contains(&class) {
            classes.push(class);
        }
    }
    let mut out = String::new();
    for class in classes {
        out.push_str(&format!(
            "\n/** RPC methods of the `{class}` Durable Object: its requests' fields as positional arguments. */\n"
        ));
        out.push_str(&format!("export interface {class}Rpc {{\n"));
        for (method, request, reply, _) in methods {
            let Some(object) = method.object.filter(|o| o.class == class) else {
                continue;
            };
            let name = ref_name(request).expect("requests are named types");
            let parameters = positional(object, name, &definitions[name]);
            out.push_str(&format!(
                "  {}({}): Promise<{}>;\n",
                object.name,
                parameters.join(", "),
                ts(reply, "  ")
            ));
        }
        out.push_str("}\n");
    }
    out
}

/// An object method's parameters: a field's type from the request, `..`
/// as `options`, the request without the named fields. A parameter is
/// optional when its field (or every field of `options`) is, and so is
/// every parameter after it (a positional argument cannot be skipped).
fn positional(object: ObjectMethod, request: &str, schema: &Value) -> Vec<String> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let named: Vec<&str> = object
        .args
        .iter()
        .filter_map(|arg| match arg {
            Arg::Field(field) => Some(*field),
            Arg::Rest => None,
        })
        .collect();
    let mut parameters: Vec<(String, String, bool)> = object
        .args
        .iter()
        .map(|arg| match arg {
            Arg::Field(field) => {
                let property = &schema["properties"][*field];
                assert!(!property.is_null(), "{request} has no field {field}");
                (
                    field.to_string(),
                    ts(property, "  "),
                    !required.contains(field),
                )
            }
            Arg::Rest => {
                let omitted: Vec<String> = named.iter().map(|f| format!("{f:?}")).collect();
                let optional = required.iter().all(|r| named.contains(r));
                let ty = format!("Omit<{request}, {}>", omitted.join(" | "));
                ("options".to_string(), ty, optional)
            }
        })
        .collect();
    let mut later_optional = true;
    for (_, _, optional) in parameters.iter_mut().rev() {
        *optional = *optional && later_optional;
        later_optional = *optional;
    }
    parameters
        .into_iter()
        .map(|(name, ty, optional)| format!("{name}{}: {ty}", if optional { "?" } else { "" }))
        .collect()
}

fn doc_comment(schema: &Value, indent: &str) -> String {
    match schema["description"].as_str() {
        Some(text) => format!("{indent}/** {} */\n", text.replace('\n', " ")),
        None => String::new(),
    }
}

/// A JSON schema as a TypeScript type (the subset the edge's types use).
fn ts(schema: &Value, indent: &str) -> String {
    if let Some(name) = ref_name(schema) {
        return name.to_owned();
    }
    if let Some(value) = schema.get("const") {
        return value.to_string();
    }
    if let Some(values) = schema["enum"].as_array() {
        return union(values.iter().map(Value::to_string).collect());
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = schema[key].as_array() {
            return union(options.iter().map(|o| ts(o, indent)).collect());
        }
    }
    match &schema["type"] {
        Value::Array(types) => union(
            types
                .iter()
                .map(|t| {
                    let mut one = schema.clone();
                    one["type"] = t.clone();
                    ts(&one, indent)
                })
                .collect(),
        ),
        Value::String(t) => match t.as_str() {
            "string" => "string".into(),
            "integer" | "number" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => {
                let item = ts(&schema["items"], indent);
                if item.contains('|') {
                    format!("({item})[]")
                } else {
                    format!("{item}[]")
                }
            }
            "object" => object(schema, indent),
            other => panic!("no TypeScript for JSON type {other}"),
        },
        _ => "unknown".into(),
    }
}

fn union(mut parts: Vec<String>) -> String {
    parts.dedup();
    parts.join(" | ")
}

fn object(schema: &Value, indent: &str) -> String {
    let Some(properties) = schema["properties"].as_object() else {
        return "Record<string, unknown>".into();
    };
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let inner = format!("{indent}  ");
    let mut out = String::from("{\n");
    for (name, property) in properties {
        out.push_str(&doc_comment(property, &inner));
        let optional = if required.contains(&name.as_str()) {
            ""
        } else {
            "?"
        };
        out.push_str(&format!(
            "{inner}{name}{optional}: {};\n",
            ts(property, &inner)
        ));
    }
    out.push_str(indent);
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
    }

    fn bless() -> bool {
        std::env::var("BATON_BLESS").is_ok_and(|v| v == "1")
    }

    /// Compares a generated file with the one checked in, or writes it.
    fn check(path: &str, expected: &str) {
        let path = root().join(path);
        let actual = std::fs::read_to_string(&path).unwrap();
        if bless() {
            if actual != expected {
                std::fs::write(&path, expected).unwrap();
            }
            return;
        }
        if actual != expected {
            let line = actual
                .lines()
                .zip(expected.lines())
                .position(|(a, e)| a != e)
                .unwrap_or(actual.lines().count().min(expected.lines().count()));
            panic!(
                "{} differs from the edge's types from line {} on; \
                 run `BATON_BLESS=1 cargo test --lib edge::schema` and review the diff",
                path.display(),
                line + 1
            );
        }
    }

    #[test]
    fn openapi_json_is_generated_from_the_types() {
        let text = std::fs::read_to_string(root().join("static/openapi.json")).unwrap();
        let document: Value = serde_json::from_str(&text).unwrap();
        let generated = serde_json::to_string_pretty(&openapi(document)).unwrap() + "\n";
        check("static/openapi.json", &generated);
    }

    #[test]
    fn index_d_ts_is_generated_from_the_types() {
        let text = std::fs::read_to_string(root().join("js/index.d.ts")).unwrap();
        let begin = text
            .find(TS_BEGIN)
            .expect("js/index.d.ts has the generated section's start");
        let end = text
            .find(TS_END)
            .expect("js/index.d.ts has the generated section's end")
            + TS_END.len()
            + 1;
        let generated = format!("{}{}{}", &text[..begin], typescript(), &text[end..]);
        check("js/index.d.ts", &generated);
    }

    #[test]
    fn every_object_method_has_a_type() {
        let generated = typescript();
        for method in METHODS {
            let Some(object) = method.object else {
                continue;
            };
            let interface = format!("export interface {}Rpc {{\n", object.class);
            let start = generated
                .find(&interface)
                .unwrap_or_else(|| panic!("no {}Rpc in js/index.d.ts", object.class));
            let body = &generated[start..start + generated[start..].find("\n}\n").unwrap()];
            assert!(
                body.contains(&format!("\n  {}(", object.name)),
                "{}Rpc has no {} (the row of {})",
                object.class,
                object.name,
                method.name
            );
        }
    }

    #[test]
    fn every_operation_is_covered_by_one_method() {
        for operation in Operation::ALL {
            let count = METHODS.iter().filter(|m| m.http == Some(operation)).count();
            assert_eq!(count, 1, "{operation:?}");
        }
        let mut names: Vec<_> = METHODS.iter().map(|m| m.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), METHODS.len(), "a method name twice");
    }
}
