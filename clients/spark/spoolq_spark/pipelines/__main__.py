import sys

from spoolq_spark.pipelines.main import main

sys.exit(main())
