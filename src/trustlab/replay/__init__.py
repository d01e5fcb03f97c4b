"""``trustlab replay``: a workload recorded once through ``serve --trace``, priced on every chip.

The timing paper's idea made one command: record what the TPM is asked
(:mod:`.load` reads the trace), price each command on each profile with the
same rules ``serve`` charges (:mod:`.price`), replay the clients' own think
time and the chip's queue (:mod:`.schedule`), and ask what post-quantum keys
would cost (:mod:`.pqc`). Neither swtpm nor the network is needed.
"""
