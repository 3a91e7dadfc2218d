from graphlint.cli import main

main()
