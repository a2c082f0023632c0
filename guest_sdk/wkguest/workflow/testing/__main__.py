"""`python -m wkguest.workflow.testing`: print the native replay benchmark."""

from .bench import main

main()
