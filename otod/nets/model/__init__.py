"""The net as a problem: the model contract (any JAX model), otod's models and the zoo, the data, the net spec, its
size, the chunked loss and its derivatives, and the net as the core's problem family with its starts (a seed's
own, a checkpoint of its reference run, where a batch schedule's phase left it).
"""
