"""The pieces of e2e/bench/run, Oxbow against Apache Kafka side by side; run is the entry point.

    constants   paths of the binaries and the Kafka peer, the clusters' fixed ports, MB
    processes   running a command (bounded, its CPU counted), the log line, free ports
    plan        the rows of the matrices and the plans: full, smoke, cluster, cluster smoke
    brokers     a single Oxbow or Kafka and their 3-node clusters: start, stop, RSS and CPU
    clients     one run of a client tool: oxbow-loadgen, Kafka's perf tools, kafka-e2e-latency
    matrix      the matrix and the fixed-rate rows, interleaved between brokers; medians
    ceilings    the machine's ceilings: loopback TCP (iperf3) and sequential write (dd)
    build       the release binaries brought up to date with the tree
    report      the printed tables

Imports go one way: constants <- processes <- {brokers, clients, ceilings, build}, and
clients <- matrix; plan imports none of them, report only constants.
"""
