"""A transformer training step under tensor, sequence, pipeline, data and expert parallelism.

``collsim sim train``: :mod:`.scenario` (a validated, frozen :class:`TrainScenario`),
:mod:`.model` (FLOPs, parameters and activation memory, Narayanan et al. 2021 and Korthikanti et
al. 2022), :mod:`.layout` (rank -> (tp, ep, dp, pp) in Megatron-LM's order), :mod:`.schedule`
(each stage's op order as ``torch.distributed.pipelining`` orders it), :mod:`.costs` (every
distinct collective costed once by NCCL's pick on the preset), :mod:`.step` (the SimPy step) and
:mod:`.result` (step time, breakdown, memory, events as plain rows); :mod:`.interval` the step's
80 % interval on a preset (the step again with every collective and send at its interval's ends).
"""

from sim.training.parallel.result import TrainResult, events_for_rank
from sim.training.parallel.scenario import TrainScenario
from sim.training.parallel.step import simulate

__all__ = ["TrainResult", "TrainScenario", "events_for_rank", "simulate"]
