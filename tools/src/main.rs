//! The `tilec` binary: parses the command line and exits with the driver's code.

use std::io::IsTerminal;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let color = std::io::stderr().is_terminal();
    let code = tilec::cli::main_with(args, &mut std::io::stdout(), &mut std::io::stderr(), color);
    std::process::exit(code);
}
