"""What these tests share."""

POD = "v1/Pod"


DEPLOYMENT = "apps/v1/Deployment"
