fn main() {
    retry::run(std::env::args_os()).exit()
}
