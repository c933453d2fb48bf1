"""Diagnosis: findings, advice, data quality and the verdict."""
