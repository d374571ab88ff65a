//! js/worker.mjs's delegations, generated from the method table
//! ([`METHODS`]) as `js/index.d.ts`'s wire types are by
//! [`schema`](super::schema).
//!
//! The module is JS because workerd takes JS RPC only on classes that
//! extend `DurableObject` or `WorkerEntrypoint`; every method of those
//! classes that serves a row only hands its arguments to Rust. Those
//! methods are written here, into regions of the file that open with
//! [`begin`] and close with [`END`]:
//! - in each Durable Object class (`Coordinator`, `RateLimiter`, ...), the
//!   row's positional method, calling its Rust core as the row's
//!   [`CoreCall`](super::methods::CoreCall) says;
//! - in the default entrypoint ([`ENTRYPOINT`]), the row's RPC method,
//!   handing its one argument to the Rust service's method of the same
//!   name, through the service's getter (`#coordinatorService`, written by
//!   hand beside the region, as is the rest of the file: imports,
//!   constructors, alarms, `handleFetch`, `batonService`).
//!
//! A test fails when the file differs from what the table generates;
//! `BATON_BLESS=1 cargo test --lib edge::worker_js` rewrites the regions.

use super::methods::{Arg, Method, METHODS};

/// The default entrypoint's class in js/worker.mjs.
pub const ENTRYPOINT: &str = "Baton";

/// The line that closes a generated region.
pub const END: &str = "  // --- end of the generated methods ---\n";

/// The line that opens `owner`'s generated region.
pub fn begin(owner: &str) -> String {
    format!(
        "  // --- {owner}: methods generated from the method table \
         (BATON_BLESS=1 cargo test --lib edge::worker_js) ---\n"
    )
}

/// Every region's owner: each Durable Object class in the table's order,
/// then the entrypoint.
pub fn owners() -> Vec<&'static str> {
    let mut owners: Vec<&'static str> = Vec::new();
    for class in METHODS.iter().filter_map(|m| m.object).map(|o| o.class) {
        if !owners.contains(&class) {
            owners.push(class);
        }
    }
    owners.push(ENTRYPOINT);
    owners
}

/// The getter by which the entrypoint reaches a Rust service:
/// `CoordinatorService` is `#coordinatorService`.
pub fn getter(service: &str) -> String {
    let mut chars = service.chars();
    let first = chars.next().map(|c| c.to_ascii_lowercase());
    format!(
        "#{}{}",
        first.into_iter().collect::<String>(),
        chars.as_str()
    )
}

/// What `owner`'s region holds, between [`begin`] and [`END`].
pub fn region(owner: &str) -> String {
    let methods: Vec<String> = if owner == ENTRYPOINT {
        METHODS.iter().map(entrypoint_method).collect()
    } else {
        METHODS
            .iter()
            .filter(|m| m.object.is_some_and(|o| o.class == owner))
            .map(object_method)
            .collect()
    };
    methods.join("\n")
}

fn entrypoint_method(method: &Method) -> String {
    format!(
        "  {name}(input) {{\n    return this.{getter}.{name}(input);\n  }}\n",
        name = method.name,
        getter = getter(method.service),
    )
}

fn object_method(method: &Method) -> String {
    let (object, core) = method
        .object
        .zip(method.core)
        .expect("a row served by an object says how its class calls the core");
    let args: Vec<&str> = object
        .args
        .iter()
        .map(|arg| match arg {
            Arg::Field(name) => *name,
            Arg::Rest => "options",
        })
        .collect();
    let args = args.join(", ");
    let passed = if core.request {
        format!("{{ {args} }}")
    } else {
        args.clone()
    };
    let call = format!("this.#core.{}({passed})", core.method);
    let call = if core.guarded {
        format!("abortOnTrap(this.ctx, () => {call})")
    } else {
        call
    };
    format!("  {}({args}) {{\n    return {call};\n  }}\n", object.name)
}

/// `worker` (js/worker.mjs's text) with every region rewritten from the
/// table. Panics naming a region that is missing, or one the table does
/// not have.
pub fn generate(worker: &str) -> String {
    let mut out = String::with_capacity(worker.len());
    let mut rest = worker;
    let mut seen = Vec::new();
    while let Some(at) = rest.find("  // --- ") {
        let line_end = rest[at..].find('\n').map_or(rest.len(), |i| at + i + 1);
        let line = &rest[at..line_end];
        let Some(owner) = owners().into_iter().find(|o| line == begin(o)) else {
            assert!(
                !line.contains("generated from the method table"),
                "js/worker.mjs has a generated region the table does not: {line}"
            );
            out.push_str(&rest[..line_end]);
            rest = &rest[line_end..];
            continue;
        };
        let end = rest[line_end..]
            .find(END)
            .unwrap_or_else(|| panic!("js/worker.mjs: {owner}'s region has no end"));
        out.push_str(&rest[..line_end]);
        out.push_str(&region(owner));
        out.push_str(END);
        rest = &rest[line_end + end + END.len()..];
        seen.push(owner);
    }
    out.push_str(rest);
    for owner in owners() {
        assert!(
            seen.contains(&owner),
            "js/worker.mjs lacks {owner}'s generated region: open it with the line \
             {:?} and close it with {END:?}",
            begin(owner)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn js_worker_delegations_are_generated_from_the_table() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("js/worker.mjs");
        let worker = std::fs::read_to_string(&path).unwrap();
        let generated = generate(&worker);
        if generated == worker {
            return;
        }
        if std::env::var("BATON_BLESS").is_ok_and(|v| v == "1") {
            std::fs::write(&path, generated).unwrap();
            return;
        }
        let line = worker
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "js/worker.mjs differs from the method table from line {} on; \
             run `BATON_BLESS=1 cargo test --lib edge::worker_js` and review the diff",
            line + 1
        );
    }

    /// Each service the entrypoint's regions call through has its getter,
    /// written by hand (how it is built is the shell's).
    #[test]
    fn every_service_has_its_getter() {
        let worker = include_str!("../../js/worker.mjs");
        for method in METHODS {
            let declared = format!("  get {}() {{", getter(method.service));
            assert!(
                worker.contains(&declared),
                "js/worker.mjs lacks `{}`, the getter of {}",
                declared.trim(),
                method.service
            );
        }
    }

    #[test]
    fn a_region_reads_as_the_table_says() {
        assert_eq!(getter("SerialQueue"), "#serialQueue");
        let coordinator = region("Coordinator");
        assert!(coordinator.contains(
            "  acquire(key, instanceId, options) {\n    return abortOnTrap(this.ctx, () => \
             this.#core.acquire(key, instanceId, options));\n  }\n"
        ));
        assert!(coordinator.contains("    return this.#core.inspect({ key });\n"));
        assert!(region("Runs")
            .contains("  await(key, options) {\n    return this.#core.awaitRun(key, options);\n"));
        assert!(region(ENTRYPOINT).contains(
            "  serialList(input) {\n    return this.#busyService.serialList(input);\n  }\n"
        ));
    }
}
