merge --help
