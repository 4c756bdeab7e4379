# Sourced by the measurement scripts whose wall times are compared: another model job on the machine (a model
# server, a bench, a solve, a recorder, a PRM collection) slows some of their work and not the rest.
model_jobs() {  # true when any such job runs; prints each (`pgrep -a`: its process id and command line)
    pgrep -af "codeforest (serve|bench|solve|recorder|collect-prm)"
}
