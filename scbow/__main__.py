from .cli import main

main(prog_name="scbow-numba")
