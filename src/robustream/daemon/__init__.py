"""The Kafka consumer daemon (``robustream serve``, ``robustream demo``) and what producers of its
input need: :func:`dataset_messages` turns a data set into input messages with flipped labels, and
:func:`send_messages` sends them to a topic (``examples/produce_noisy.py`` uses both)."""

from .producer import dataset_messages, send_messages

__all__ = ["dataset_messages", "send_messages"]
