from arbiter.cli import main

main()
