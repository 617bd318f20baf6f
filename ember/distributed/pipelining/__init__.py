"""``torch.distributed.pipelining`` for ember: pipeline parallelism over the process
groups of ``ember.distributed``.

* ``PipelineStage`` (``stage.py``): one rank's part of the model and its point-to-point
  traffic with the neighbouring stages.
* Schedules (``schedules.py``): ``ScheduleGPipe``, ``Schedule1F1B`` (one stage per rank),
  ``ScheduleLoopedBFS``, ``ScheduleInterleaved1F1B`` (several stages per rank).
* ``pipeline``/``pipe_split``/``SplitPoint`` (``_IR.py``): cut a model into stages by
  tracing it with ember.fx.
* ``microbatch``: cutting inputs into microbatches and merging outputs.
"""
from ember.distributed.pipelining._IR import Pipe, SplitPoint, pipe_split, pipeline
from ember.distributed.pipelining.schedules import (Schedule1F1B, ScheduleGPipe,
                                                    ScheduleInterleaved1F1B,
                                                    ScheduleLoopedBFS)
from ember.distributed.pipelining.stage import PipelineStage, build_stage

__all__ = ["Pipe", "pipe_split", "SplitPoint", "pipeline", "PipelineStage", "build_stage",
           "Schedule1F1B", "ScheduleGPipe", "ScheduleInterleaved1F1B", "ScheduleLoopedBFS"]
