//! The default entrypoint's methods (contract §7) for the concepts served
//! by a Durable Object or over D1, and the HTTP API's commands for them:
//! generated from the method table (`crate::edge::methods`), one
//! `#[wasm_bindgen]` class per concept (`CoordinatorService`,
//! `RateService`, `DebounceService`, `RunsService`, `SerialQueue`), whose
//! methods js/worker.mjs's `Baton` hands its one object argument.
//!
//! The serial queue's methods run in the calling Worker, over D1: each is
//! decoded into its [`SerialCall`] and run by [`serial`], the one
//! dispatch the HTTP API uses too.
//!
//! Each method decodes its request here (`crate::edge`, so bad input is
//! refused before any object is woken) and calls the object its request
//! names through the object's stub, with JS RPC and the positional
//! arguments the row gives ([`stub::call`]), exactly as a Worker holding
//! the binding would; the reply is the object's, untouched. The object
//! checks what only it can (the options against the configuration).

use super::js;
use super::serial_queue_d1::Shell;
use super::stub::{self, CallError, ObjectCall};
use crate::edge::methods::{arg, method_table, ObjectMethod};
use crate::edge::{CoordinatorCall, DebounceCall, RateCall, RunCall, SerialCall};
use std::rc::Rc;
use wasm_bindgen::prelude::*;

/// The shell's part of the table: per Durable Object concept, its service
/// class and how its calls reach the object.
macro_rules! services {
    ($(
        $(#[$attr:meta])*
        $concept:ident($call:ident) $(by $by:ident)?, served $served:tt {$(
            $variant:ident = $rpc:literal($request:ty) -> $reply:ty
                $(, on HTTP -> $http_reply:ty)?,
                $(object $object:literal($($arg:tt),*)
                    $([$($flag:ident $(($value:literal))?),*])?,)?
                http $operation:ident $verb:ident $($query:ident)? $path:literal;
        )+}
    )+) => {
        $(service!($call $served {$($variant $rpc $(($object($($arg),*)))?)+});)+
    };
}

/// One concept's service, by how it is served.
macro_rules! service {
    // The serial queue, served over D1 in the calling Worker by
    // `serial_queue_d1::Shell` through [`serial`].
    ($call:ident [d1 $service:ident] {$($variant:ident $rpc:literal)+}) => {
        /// The Rust half of the Worker's serial-queue methods (see
        /// js/worker.mjs): one object argument each, the §7 shape.
        #[wasm_bindgen]
        pub struct $service {
            shell: Rc<Shell>,
        }

        #[wasm_bindgen]
        impl $service {
            #[wasm_bindgen(constructor)]
            pub fn new(env: worker::Env, ctx: worker::worker_sys::Context) -> $service {
                console_error_panic_hook::set_once();
                super::decision_log::configure(&env);
                $service {
                    shell: Rc::new(Shell::new(env, worker::Context::new(ctx))),
                }
            }

            $(
                #[wasm_bindgen(js_name = $rpc)]
                #[allow(non_snake_case)]
                pub fn $variant(&self, input: JsValue) -> js_sys::Promise {
                    let shell = self.shell.clone();
                    js::promise(async move {
                        serial(&shell, $call::$variant(js::request(input)?)).await
                    })
                }
            )+
        }
    };
    // The lists of what is busy, by `busy_service::BusyService`.
    ($call:ident [list $service:ident] $rows:tt) => {};
    (
        $call:ident [object $class:ident $binding:literal $service:ident $decode:ident]
        {$($variant:ident $rpc:literal ($object:literal($($arg:tt),*)))+}
    ) => {
        impl ObjectCall for $call {
            const BINDING: &'static str = $binding;

            fn name(&self) -> &str {
                self.key().as_str()
            }

            fn encode(&self) -> (JsValue, ObjectMethod) {
                match self {
                    $($call::$variant(request) => (
                        js::to_js(request),
                        ObjectMethod {
                            class: stringify!($class),
                            name: $object,
                            args: &[$(arg!($arg)),*],
                        },
                    ),)+
                }
            }
        }

        /// The Rust half of the default entrypoint's methods of the concept
        /// (see js/worker.mjs): one object argument each, the §7 shape.
        #[wasm_bindgen]
        pub struct $service {
            env: worker::Env,
        }

        #[wasm_bindgen]
        impl $service {
            #[wasm_bindgen(constructor)]
            pub fn new(env: worker::Env) -> $service {
                console_error_panic_hook::set_once();
                $service { env }
            }

            $(
                #[wasm_bindgen(js_name = $rpc)]
                #[allow(non_snake_case)]
                pub fn $variant(&self, input: JsValue) -> js_sys::Promise {
                    let env = self.env.clone();
                    js::promise(async move {
                        let call = $call::$variant(js::$decode(input)?);
                        stub::call(&env, &call).await.map_err(CallError::into_js)
                    })
                }
            )+
        }
    };
}

method_table!(services);

/// Runs one serial-queue method: its reply as the JS value RPC callers
/// get (the HTTP API writes the same value as its body), or what it threw.
pub(super) async fn serial(shell: &Rc<Shell>, call: SerialCall) -> Result<JsValue, JsValue> {
    Ok(match call {
        SerialCall::Enqueue(request) => js::to_js(&shell.enqueue(request).await?),
        SerialCall::Claim(request) => js::to_js(&shell.claim(request).await?),
        SerialCall::Heartbeat(request) => js::to_js(&shell.heartbeat(request).await?),
        SerialCall::Release(request) => js::to_js(&Shell::release(shell, request).await?),
        SerialCall::Inspect(request) => js::to_js(&shell.inspect(request).await?),
        SerialCall::Pause(request) => js::to_js(&shell.pause(request).await?),
        SerialCall::Resume(request) => js::to_js(&Shell::resume(shell, request).await?),
    })
}
