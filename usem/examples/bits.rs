//! The bits of each argument's vector, space-separated (usem/tests/reference.rs compares builds).
fn main() {
    let cache = std::env::var_os("RESEARCH_BUNDLE_CACHE").map(std::path::PathBuf::from).unwrap_or_else(|| {
        std::path::PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/research-bundle")
    });
    let model = usem::UseModel::load(&cache.join("models/use-m3.bin")).expect("the USE weights");
    let texts: Vec<String> = std::env::args().skip(1).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for v in model.embed(&refs) {
        println!("{}", v.iter().map(|x| x.to_bits().to_string()).collect::<Vec<_>>().join(" "));
    }
}
