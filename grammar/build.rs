//! Generates the LR parser from `src/parser.lalrpop`.
fn main() {
    lalrpop::process_src().expect("lalrpop grammar generation failed");
}
