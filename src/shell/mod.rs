//! The Worker shell (wasm32 only): see the submodules.
