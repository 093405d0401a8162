from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render

from xqmeval import selectors


@login_required
def home(request):
    return render(request, "core/home.html", {"projects": selectors.project_overview(request.user)})


def healthz(request):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
