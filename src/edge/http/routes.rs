//! The route table and the router.
//!
//! [`ROUTES`] is the only list of routes: the static files', then one per
//! API operation, built from the method table (`edge::methods`, where an
//! operation's verb and path are written). The router walks it, and tests
//! check `static/openapi.json` against it path by path and method by
//! method (here) and schema by schema (`edge::schema`). A path template's
//! segments are literals, matched exactly, or at most one parameter
//! (`{key}`, `{group}`, `{bucket}`), which takes one raw (still
//! percent-encoded) segment; decoding it is part of parsing the command,
//! after authentication.

use super::error::HttpError;
use crate::edge::methods::API_ROUTES;

/// The methods the API serves. Any other (HEAD, OPTIONS, DELETE...) is a
/// 405 on a known path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    /// Sets a value to what the body says (a key's limit, §11).
    Put,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
        }
    }
}

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// The status page's files and the OpenAPI document: static, no data.
    Public,
    /// `Authorization: Bearer <BATON_TOKEN>`.
    Bearer,
}

/// The static files the Worker serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asset {
    StatusPage,
    StatusScript,
    StatusStyle,
    OpenApi,
}

pub use crate::edge::methods::Operation;

/// What an API route reads besides its path parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Nothing: a GET (a GET's body is never read).
    Path,
    /// A JSON body: every change is a POST with one (or a PUT, for a
    /// value set whole: a key's limit). A run's `await` and
    /// `events` change nothing but take options (the long-poll's timeout,
    /// the cursor), so they are POSTs with a body too.
    Body,
    /// A GET's query string, its fields decoded as a body's would be (a
    /// list's `cursor` and `limit`). No route reads one yet: the HTTP shell
    /// learns to with the first.
    Query,
}

impl Operation {
    /// Whether the request carries a JSON body (see [`Input`]).
    pub fn has_body(self) -> bool {
        self.route().2 == Input::Body
    }

    /// The request field its path parameter fills (`key`, `group`,
    /// `bucket`), if its template has one.
    pub fn path_field(self) -> Option<&'static str> {
        path_field(self.route().1)
    }

    /// The largest body the operation reads: the API's bound, or, for the
    /// operations that carry a caller's JSON (a run's `result`, an event's
    /// `data`, a debounce's `params`),
    /// that JSON's own bound plus room for the other fields.
    pub fn body_bytes_max(self) -> usize {
        use crate::limits::{HTTP_BODY_BYTES_MAX, RUN_EVENT_DATA_BYTES_MAX, RUN_OUTCOME_BYTES_MAX};
        match self {
            Operation::RunComplete => RUN_OUTCOME_BYTES_MAX + HTTP_BODY_BYTES_MAX,
            Operation::RunAppend => RUN_EVENT_DATA_BYTES_MAX + HTTP_BODY_BYTES_MAX,
            // A webhook's payload as `params`: the contract's 1 MiB.
            Operation::Debounce | Operation::DebounceStartAt => {
                crate::limits::DEBOUNCE_PARAMS_BYTES_MAX + HTTP_BODY_BYTES_MAX
            }
            _ => HTTP_BODY_BYTES_MAX,
        }
    }
}

/// What a route leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Asset(Asset),
    Api(Operation),
}

/// One row of the route table.
#[derive(Debug, Clone, Copy)]
pub struct RouteSpec {
    pub method: Method,
    /// The path template, as written in the OpenAPI document.
    pub path: &'static str,
    pub endpoint: Endpoint,
    pub auth: Auth,
}

impl RouteSpec {
    /// An operation's route, from its row in the method table.
    pub const fn api(operation: Operation) -> RouteSpec {
        let (method, path, _) = operation.route();
        RouteSpec {
            method,
            path,
            endpoint: Endpoint::Api(operation),
            auth: Auth::Bearer,
        }
    }
}

const fn asset(path: &'static str, asset: Asset) -> RouteSpec {
    RouteSpec {
        method: Method::Get,
        path,
        endpoint: Endpoint::Asset(asset),
        auth: Auth::Public,
    }
}

/// The static files' routes.
const ASSETS: [RouteSpec; 4] = [
    asset("/", Asset::StatusPage),
    asset("/app.js", Asset::StatusScript),
    asset("/style.css", Asset::StatusStyle),
    asset("/openapi.json", Asset::OpenApi),
];

/// Every route the Worker answers: the static files, then the API's (one
/// per operation, from the method table, `edge::methods`). A test fails
/// until `static/openapi.json` describes exactly these;
/// `BATON_BLESS=1 cargo test --lib edge::schema` adds a skeleton for a new
/// API route (its schemas come from `edge::methods`), whose prose is then
/// written by hand.
pub const ROUTES: &[RouteSpec] = &{
    let mut routes = [ASSETS[0]; ASSETS.len() + API_ROUTES.len()];
    let mut i = 0;
    while i < ASSETS.len() {
        routes[i] = ASSETS[i];
        i += 1;
    }
    let mut j = 0;
    while j < API_ROUTES.len() {
        routes[i + j] = API_ROUTES[j];
        j += 1;
    }
    routes
};

/// The route's parameter (`key`, `group`, `bucket`), if its template has one.
pub const fn path_field(template: &'static str) -> Option<&'static str> {
    let bytes = template.as_bytes();
    let mut start = 0;
    while start < bytes.len() && bytes[start] != b'{' {
        start += 1;
    }
    let mut end = start;
    while end < bytes.len() && bytes[end] != b'}' {
        end += 1;
    }
    if end >= bytes.len() {
        return None;
    }
    let (_, tail) = template.split_at(start + 1);
    let (field, _) = tail.split_at(end - start - 1);
    Some(field)
}

/// A routed request: what it leads to, and the raw path parameter if the
/// template has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched<'a> {
    pub endpoint: Endpoint,
    pub auth: Auth,
    /// The `{key}`, `{group}` or `{bucket}` segment, still percent-encoded.
    pub param: Option<&'a str>,
}

/// Matches a template against a raw path; on a match, the parameter segment.
/// `None` means no match; `Some(None)` a match without a parameter.
fn match_template<'a>(template: &str, path: &'a str) -> Option<Option<&'a str>> {
    let template = template.strip_prefix('/')?;
    let path = path.strip_prefix('/')?;
    let mut param = None;
    let mut path_segments = path.split('/');
    for expected in template.split('/') {
        let actual = path_segments.next()?;
        if expected.starts_with('{') && expected.ends_with('}') {
            param = Some(actual);
        } else if expected != actual {
            return None;
        }
    }
    match path_segments.next() {
        Some(_) => None,
        None => Some(param),
    }
}

/// The route for `method` and the raw (percent-encoded) `path`: 404 when no
/// route has the path, 405 (naming the allowed methods) when the path exists
/// for other methods. Methods are matched exactly, as HTTP defines them.
pub fn route<'a>(method: &str, path: &'a str) -> Result<Matched<'a>, HttpError> {
    let mut allow = Vec::new();
    for spec in ROUTES {
        let Some(param) = match_template(spec.path, path) else {
            continue;
        };
        if spec.method.as_str() == method {
            return Ok(Matched {
                endpoint: spec.endpoint,
                auth: spec.auth,
                param,
            });
        }
        allow.push(spec.method.as_str());
    }
    if allow.is_empty() {
        Err(HttpError::NotFound)
    } else {
        Err(HttpError::MethodNotAllowed { allow })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_route(method: &str, path: &str) -> (Operation, Option<String>) {
        let matched = route(method, path).unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        assert_eq!(matched.auth, Auth::Bearer);
        match matched.endpoint {
            Endpoint::Api(op) => (op, matched.param.map(str::to_owned)),
            other => panic!("{method} {path}: {other:?}"),
        }
    }

    #[test]
    fn api_routes_take_the_key_or_group_from_the_path() {
        let cases = [
            ("POST", "/v1/keys/k1/enqueue", Operation::KeyEnqueue, "k1"),
            ("POST", "/v1/keys/k1/acquire", Operation::KeyAcquire, "k1"),
            ("POST", "/v1/keys/k1/release", Operation::KeyRelease, "k1"),
            ("GET", "/v1/keys/k1", Operation::KeyInspect, "k1"),
            ("POST", "/v1/groups/g/enqueue", Operation::GroupEnqueue, "g"),
            ("POST", "/v1/groups/g/claim", Operation::GroupClaim, "g"),
            (
                "POST",
                "/v1/groups/g/heartbeat",
                Operation::GroupHeartbeat,
                "g",
            ),
            ("POST", "/v1/groups/g/release", Operation::GroupRelease, "g"),
            ("GET", "/v1/groups/g", Operation::GroupInspect, "g"),
            ("POST", "/v1/debounce/k", Operation::Debounce, "k"),
            (
                "POST",
                "/v1/debounce/k/start-at",
                Operation::DebounceStartAt,
                "k",
            ),
            (
                "POST",
                "/v1/debounce/k/flush",
                Operation::DebounceFlush,
                "k",
            ),
            (
                "POST",
                "/v1/debounce/k/cancel",
                Operation::DebounceCancel,
                "k",
            ),
            ("GET", "/v1/debounce/k", Operation::DebounceInspect, "k"),
            ("POST", "/v1/runs/r/claim", Operation::RunClaim, "r"),
            ("POST", "/v1/runs/r/complete", Operation::RunComplete, "r"),
            ("POST", "/v1/runs/r/await", Operation::RunAwait, "r"),
            ("POST", "/v1/runs/r/append", Operation::RunAppend, "r"),
            ("POST", "/v1/runs/r/events", Operation::RunEvents, "r"),
            // Parameters stay encoded until they are parsed.
            ("GET", "/v1/keys/a%2Fb", Operation::KeyInspect, "a%2Fb"),
            // A literal-looking parameter is still a parameter.
            ("GET", "/v1/keys/enqueue", Operation::KeyInspect, "enqueue"),
        ];
        for (method, path, op, param) in cases {
            assert_eq!(
                api_route(method, path),
                (op, Some(param.to_owned())),
                "{method} {path}"
            );
        }
    }

    #[test]
    fn an_empty_parameter_routes_and_is_refused_as_input() {
        // `/v1/keys//acquire` names the empty key: a 400 from parsing, not a 404.
        assert_eq!(
            api_route("POST", "/v1/keys//acquire"),
            (Operation::KeyAcquire, Some(String::new()))
        );
        assert_eq!(
            api_route("GET", "/v1/groups/"),
            (Operation::GroupInspect, Some(String::new()))
        );
    }

    #[test]
    fn static_files_are_public() {
        for (path, asset) in [
            ("/", Asset::StatusPage),
            ("/app.js", Asset::StatusScript),
            ("/style.css", Asset::StatusStyle),
            ("/openapi.json", Asset::OpenApi),
        ] {
            let matched = route("GET", path).unwrap();
            assert_eq!(matched.endpoint, Endpoint::Asset(asset));
            assert_eq!(matched.auth, Auth::Public);
        }
    }

    #[test]
    fn unknown_paths_are_404() {
        for path in [
            "",
            "/v1",
            "/v1/key",
            "/v1/keys/k/",
            "/v1/keys/k/enqueue/",
            "/v1/keys/k/unknown",
            "/v1/keys/k/enqueue/extra",
            "/v2/keys/k",
            "/V1/keys/k",
            "/v1/Keys/k",
            "/v1/keys/k/Enqueue",
            "/v1/group/g",
            "/v1/groupz",
            "/index.html",
            "/openapi.yaml",
            "//",
            "/v1//k",
            "x/v1/keys/k",
            "/v1/keys/k/enqueue?x",
        ] {
            assert_eq!(route("GET", path), Err(HttpError::NotFound), "GET {path:?}");
            assert_eq!(
                route("POST", path),
                Err(HttpError::NotFound),
                "POST {path:?}"
            );
        }
    }

    #[test]
    fn known_paths_with_other_methods_are_405() {
        let cases = [
            ("GET", "/v1/keys/k/enqueue", vec!["POST"]),
            ("PUT", "/v1/keys/k/acquire", vec!["POST"]),
            ("POST", "/v1/keys/k", vec!["GET"]),
            ("DELETE", "/v1/groups/g", vec!["GET"]),
            ("HEAD", "/v1/groups/g", vec!["GET"]),
            ("get", "/v1/groups/g", vec!["GET"]),
            ("GET", "/v1/groups/g/claim", vec!["POST"]),
            ("POST", "/", vec!["GET"]),
            ("OPTIONS", "/openapi.json", vec!["GET"]),
        ];
        for (method, path, allow) in cases {
            assert_eq!(
                route(method, path),
                Err(HttpError::MethodNotAllowed { allow }),
                "{method} {path}"
            );
        }
    }

    #[test]
    fn every_operation_is_routed_once_and_every_route_is_distinct() {
        for op in Operation::ALL {
            let count = ROUTES
                .iter()
                .filter(|r| r.endpoint == Endpoint::Api(op))
                .count();
            assert_eq!(count, 1, "{op:?}");
        }
        for (i, a) in ROUTES.iter().enumerate() {
            for b in &ROUTES[i + 1..] {
                assert!(
                    !(a.path == b.path && a.method == b.method),
                    "{} {} twice",
                    a.method.as_str(),
                    a.path
                );
            }
            let public = matches!(a.endpoint, Endpoint::Asset(_));
            assert_eq!(a.auth == Auth::Public, public, "{}", a.path);
            if let Endpoint::Api(op) = a.endpoint {
                assert_eq!(
                    op.has_body(),
                    matches!(a.method, Method::Post | Method::Put),
                    "{}",
                    a.path
                );
            }
        }
    }

    /// The OpenAPI document describes exactly the routes in the table.
    #[test]
    fn openapi_document_matches_the_route_table() {
        let doc: serde_json::Value =
            serde_json::from_str(include_str!("../../../static/openapi.json")).unwrap();
        let version = doc["openapi"].as_str().unwrap();
        assert!(version.starts_with("3.1."), "{version}");
        let mut documented = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                if method == "parameters" {
                    continue;
                }
                let public = operation
                    .get("security")
                    .and_then(|s| s.as_array())
                    .is_some_and(|s| s.is_empty());
                documented.push((method.to_uppercase(), path.clone(), public));
            }
        }
        let mut routed: Vec<_> = ROUTES
            .iter()
            .map(|r| {
                (
                    r.method.as_str().to_owned(),
                    r.path.to_owned(),
                    r.auth == Auth::Public,
                )
            })
            .collect();
        documented.sort();
        routed.sort();
        assert_eq!(documented, routed);
        // Authenticated unless an operation opts out.
        assert_eq!(doc["security"], serde_json::json!([{ "bearer": [] }]));
        assert_eq!(
            doc["components"]["securitySchemes"]["bearer"]["scheme"],
            "bearer"
        );
    }
}
