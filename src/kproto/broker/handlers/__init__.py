"""The broker's API handlers, one module per concern; importing a module registers
its handlers in :data:`kproto.broker.dispatch.HANDLERS`."""
