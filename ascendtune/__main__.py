from ascendtune.cli.app import main

main()
