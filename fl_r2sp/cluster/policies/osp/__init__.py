"""OSP: the layer choice, LGP and ICS rules, the ICS budget, the coordinator and the record of its
three variants.
"""
