"""Research code that uses the platform's libraries but is no part of the running platform.

Plain Python packages (not Django apps). They may import the libraries (e.g. `hardness`, `zoo.encoder`);
nothing in the platform imports them.
"""
