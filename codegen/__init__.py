"""kproto's code generator: Kafka's JSON message definitions -> attrs entity classes.

The pipeline is parse (:mod:`codegen.parser`) -> model (:mod:`codegen.model`) ->
templates (``codegen/templates``) -> emit (:mod:`codegen.emit`); :mod:`codegen.sources`
stages and checks the inputs. Run it as ``python -m codegen``.
"""
