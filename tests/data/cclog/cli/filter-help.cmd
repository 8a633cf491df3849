filter --help
