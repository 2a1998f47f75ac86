fn main() {
    std::process::exit(mm2_offsets::cli::main());
}
