//! The build script of every function crate: its bootstrap is linked as a position-dependent
//! executable (`-no-pie`). A PIE of this size carries ~80,000 relocations that the loader
//! writes into ~470 pages at every start, one copy-on-write page fault each; at a fixed
//! address there are none, and a cold start takes half the time (docs/deploy.md, "Cold
//! starts"). The code is still compiled position-independent, so no dependency is rebuilt;
//! shared libraries, the heap, the stack and mappings keep their random addresses.
fn main() {
    println!("cargo:rerun-if-changed=../link.rs");
    // Lambda's targets (Linux, GNU); a build elsewhere (macOS) links as it would anyway.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
