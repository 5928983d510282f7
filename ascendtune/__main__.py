try:
    from ascendtune.cli.app import main
except KeyboardInterrupt:  # Ctrl-C while the interpreter was still importing the CLI
    import sys

    sys.stderr.write("ascendtune: interrupted\n")
    sys.exit(130)

main()
