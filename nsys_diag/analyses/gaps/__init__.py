"""GPU idle gaps: utilization, their causes, the evidence and its wording."""
