from kopf_sim.cli import main

main(prog_name="python -m kopf_sim")
