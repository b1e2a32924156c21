"""The KopfExample CRD (permissive schema) shared by the tests of kopf against the simulated cluster."""

KOPFEXAMPLES_CRD = {
    'apiVersion': 'apiextensions.k8s.io/v1',
    'kind': 'CustomResourceDefinition',
    'metadata': {'name': 'kopfexamples.kopf.dev'},
    'spec': {
        'group': 'kopf.dev',
        'scope': 'Namespaced',
        'names': {'plural': 'kopfexamples', 'singular': 'kopfexample', 'kind': 'KopfExample',
                  'shortNames': ['kex']},
        'versions': [{
            'name': 'v1', 'served': True, 'storage': True,
            'subresources': {'status': {}},
            'schema': {'openAPIV3Schema': {
                'type': 'object',
                'properties': {
                    'spec': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True},
                    'status': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True},
                },
            }},
        }],
    },
}
