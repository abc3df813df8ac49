"""Topic administration: CreateTopics, DeleteTopics, CreatePartitions (below)."""
